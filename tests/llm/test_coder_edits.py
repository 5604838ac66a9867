"""The coder's edit operations (meta_agent/inside/coder_sandbox.py), run as they are in the sandbox:
`python -c SOURCE OP ARGS`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from meta_agent.agents.coder_tools import SANDBOX_SCRIPT, diff_paths, refuse_path

SOURCE = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 2\n"


def op(root: Path, name: str, **args: Any) -> dict[str, Any]:
    res = subprocess.run([sys.executable, "-c", SANDBOX_SCRIPT, name, json.dumps(args)], cwd=root,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_diff_with_wrong_line_numbers_still_applies_at_the_matching_context(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    diff = "--- a/m.py\n+++ b/m.py\n@@ -40,2 +40,2 @@\n def g(x):\n-    return x * 2\n+    return x * 3\n"
    out = op(tmp_path, "patch", diff=diff)
    assert out == {"ok": True, "text": "patch applied to m.py", "changed": ["m.py"]}
    assert (tmp_path / "m.py").read_text() == SOURCE.replace("x * 2", "x * 3")


def test_a_diff_that_does_not_match_changes_nothing_and_says_where(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "n.py").write_text("a = 1\n")
    diff = ("--- a/n.py\n+++ b/n.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
            "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x - 1\n+    return x\n")
    out = op(tmp_path, "patch", diff=diff)
    assert not out["ok"] and "hunk 1 of m.py (@@ -1) does not match" in out["text"]
    assert (tmp_path / "n.py").read_text() == "a = 1\n", "all files change or none"


def test_an_edit_that_breaks_python_syntax_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    out = op(tmp_path, "replace", path="m.py", search="return x + 1", replace="return x +")
    assert not out["ok"] and "syntax error at line 2" in out["text"]
    assert (tmp_path / "m.py").read_text() == SOURCE


def test_replace_needs_a_unique_match(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    out = op(tmp_path, "replace", path="m.py", search="return x", replace="return -x")
    assert not out["ok"] and "occurs 2 times" in out["text"]


def test_new_and_deleted_files_via_dev_null(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("bye\n")
    diff = ("--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+X = 1\n+Y = 2\n"
            "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
    assert op(tmp_path, "patch", diff=diff)["changed"] == ["old.txt", "pkg/new.py"]
    assert (tmp_path / "pkg" / "new.py").read_text() == "X = 1\nY = 2\n" and not (tmp_path / "old.txt").exists()


def test_paths_outside_the_checkout_are_refused_inside_and_out(tmp_path: Path) -> None:
    assert not op(tmp_path, "read", path="../../etc/passwd")["ok"]
    assert refuse_path("/etc/passwd") and refuse_path("../x") and refuse_path(".git/config")
    assert refuse_path("harness/./io.py") and refuse_path("harness/__main__.py")
    assert refuse_path("harness/math/rewards.py") is None
    assert diff_paths("--- a/harness/io.py\n+++ b/harness/io.py\n") == ["harness/io.py", "harness/io.py"]
