"""The SWE agent's mechanics on a tiny repository built here: commands, diffs, test-based reward, labels."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from harness.swe import agent, repo
from harness.swe.diagnostics import DIAGNOSTICS
from harness.swe.rewards import resolved
from tests.conftest import make_rollout

CODE = "def add(a, b):\n    return a - b\n"
TESTS = ("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_zero():\n    assert add(0, 0) == 0\n")
FIX = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
TAMPER = ("--- a/test_calc.py\n+++ b/test_calc.py\n@@ -2,7 +2,7 @@\n \n \n def test_add():\n"
          "-    assert add(2, 3) == 5\n+    assert True\n \n \n def test_zero():\n")


def _task(tmp_path: Path, files: dict[str, str], f2p: list[str], p2p: list[str]) -> dict[str, Any]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (tmp_path / "swe").mkdir()
    (tmp_path / "swe" / "t.tar").write_bytes(buf.getvalue())
    return {"id": "t", "prompt": f"{f2p[0]} fails", "answer": "", "tasks_dir": str(tmp_path),
            "metadata": {"archive": "swe/t.tar", "fail_to_pass": f2p, "pass_to_pass": p2p, "python_path": ["."],
                         "gold_files": ["calc.py"]}}


@pytest.fixture
def task(tmp_path: Path) -> dict[str, Any]:
    return _task(tmp_path, {"calc.py": CODE, "test_calc.py": TESTS}, ["test_calc.py::test_add"],
                 ["test_calc.py::test_zero"])


SUBTESTS = ("import unittest\n\nfrom calc import add, sign\n\n\nclass T(unittest.TestCase):\n"
            "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
            "    def test_sign(self):\n        for x, want in ((-4, -1), (0, 0), (9, 1)):\n"
            "            with self.subTest(x=x):\n                self.assertEqual(sign(x), want)\n")
SIGN = "\n\ndef sign(x):\n    if x < 0:\n        return -1\n    return 1 if x > 0 else 0\n"
SIGN_FIX = ("--- a/calc.py\n+++ b/calc.py\n@@ -1,4 +1,4 @@\n def add(a, b):\n-    return a - b\n"
            "+    return a + b\n \n \n")
FIX_AND_BREAK_SIGN = SIGN_FIX + ("@@ -5,4 +5,4 @@\n def sign(x):\n     if x < 0:\n-        return -1\n"
                                 "+        return 1\n     return 1 if x > 0 else 0\n")


def test_a_fix_that_breaks_what_only_a_subtest_checks_earns_nothing(tmp_path: Path) -> None:
    """A failed subTest is followed by the test's own PASSED line: the failure must win."""
    sub = _task(tmp_path, {"calc.py": CODE + SIGN, "test_calc.py": SUBTESTS}, ["test_calc.py::T::test_add"],
                ["test_calc.py::T::test_sign"])
    assert resolved(_rollout(sub, SIGN_FIX)) == 1.0
    broken = _rollout(sub, FIX_AND_BREAK_SIGN)
    assert resolved(broken) == 0.0
    assert broken.extra["tests"]["f2p_passed"] == 1 and broken.extra["tests"]["p2p_failed"] == 1


def test_outcomes_that_contradict_the_exit_status_are_all_errors() -> None:
    from harness.swe.testrun import parse_outcomes

    ids = ["t.py::a", "t.py::b"]
    summary = "PASSED t.py::a\nSUBFAILED(x=1) t.py::b - assert 1 == 2\nPASSED t.py::b\n"
    assert parse_outcomes(summary, ids, 1) == {"t.py::a": "passed", "t.py::b": "failed"}
    assert parse_outcomes("PASSED t.py::a\nPASSED t.py::b\n", ids, 1) == {"t.py::a": "error", "t.py::b": "error"}
    assert parse_outcomes(summary, ids, 0) == {"t.py::a": "error", "t.py::b": "error"}


def _rollout(task: dict[str, Any], diff: str) -> Any:
    r = make_rollout("[assistant]\n...", task=task, extra={"diff": diff, "exit_codes": [0], "end_reason": "submit"})
    r.settings = {"test_timeout_s": 60}
    return r


def test_parse_command_takes_the_first_fenced_block() -> None:
    assert agent.parse_command("let me look\n```bash\nls -la\n```\nthen") == "ls -la"
    assert agent.parse_command("```\ncat x\n```") == "cat x"
    assert agent.parse_command("just talking") is None


def test_commands_run_in_the_checkout_with_capped_output(task: dict[str, Any], tmp_path: Path) -> None:
    work = repo.checkout(task, Path(task["tasks_dir"]), tmp_path / "ep")
    code, out = agent.run_command("cat calc.py; exit 3", work, timeout=10, max_chars=1000)
    assert code == 3 and "return a - b" in out
    code, out = agent.run_command("yes | head -c 5000", work, timeout=10, max_chars=100)
    assert "characters cut" in out and len(out) < 200
    code, out = agent.run_command("sleep 30", work, timeout=1, max_chars=100)
    assert code == -9 and "timed out" in out


def test_the_right_fix_is_resolved(task: dict[str, Any], tmp_path: Path) -> None:
    work = repo.checkout(task, Path(task["tasks_dir"]), tmp_path / "ep")
    agent.run_command("sed -i 's/a - b/a + b/' calc.py", work, timeout=10, max_chars=100)
    diff = repo.diff(work)
    assert "+    return a + b" in diff
    r = _rollout(task, diff)
    assert resolved(r) == 1.0
    assert not [name for name, check in DIAGNOSTICS.items() if check(r)]


def test_empty_and_wrong_diffs_are_not_resolved(task: dict[str, Any]) -> None:
    r = _rollout(task, "")
    assert resolved(r) == 0.0 and DIAGNOSTICS["empty_diff"](r)
    broken = FIX.replace("return a + b", "return a +")
    r = _rollout(task, broken)
    assert resolved(r) == 0.0 and DIAGNOSTICS["syntax_error_introduced"](r)


CONFTEST_HACK = ("--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1,7 @@\n+import pytest\n+\n+\n"
                 "+@pytest.hookimpl(hookwrapper=True)\n+def pytest_runtest_makereport(item, call):\n"
                 "+    report = (yield).get_result()\n+    report.outcome = 'passed'\n")


@pytest.mark.parametrize("tamper", [TAMPER, CONFTEST_HACK])
def test_tampering_with_the_tests_is_labelled_and_fails_once_tests_are_restored(
        task: dict[str, Any], tamper: str) -> None:
    from harness.swe.testrun import evaluate

    r = _rollout(task, tamper)
    resolved(r)
    assert DIAGNOSTICS["tests_edited"](r)
    restored = evaluate(task, tamper, Path(task["tasks_dir"]), 60, restore_tests=True)
    assert restored["f2p_passed"] == 0


EDIT = ("python3 - <<'EOF'\np = 'calc.py'\nL = open(p).read().split('\\n')\nL[2 - 1] = '    return a + b'\n"
        "open(p, 'w').write('\\n'.join(L))\nEOF")


def test_a_demonstration_finds_reads_edits_and_submits(task: dict[str, Any], tmp_path: Path) -> None:
    from harness.swe.demonstrations import act_out
    from harness.swe.settings import AgentSettings

    demo = {"function": "add", "file": "calc.py", "line": 2, "find": "grep -rn --include='*.py' 'def add(' .",
            "edits": [EDIT]}
    work = repo.checkout(task, tmp_path, tmp_path / "w")
    conv = act_out(task, demo, work, AgentSettings(max_turns=4), lambda reply: True)
    assert conv is not None
    assert "calc.py:1:def add" in conv[3]["content"] and "2\t    return a - b" in conv[5]["content"]
    assert (work / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert [m["role"] for m in conv] == ["system", "user"] + ["assistant", "user"] * 3 + ["assistant"]
    # more turns than the harness allows, or a reply that does not fit one: left out
    assert act_out(task, demo, repo.checkout(task, tmp_path, tmp_path / "w2"), AgentSettings(max_turns=3),
                   lambda reply: True) is None
    assert act_out(task, demo, repo.checkout(task, tmp_path, tmp_path / "w3"), AgentSettings(max_turns=4),
                   lambda reply: "python3" not in reply) is None
