"""Problem statements hide the fix; splits never share a (project, file) group."""

from __future__ import annotations

from collections import Counter

from meta_agent.swe.instance import MutationInfo, SweInstance
from meta_agent.swe.splits import assign_splits, group_key, with_splits
from meta_agent.swe.statement import quotes_patch, write_problem_statement

PATCH = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -5,1 +5,1 @@
-    if x <= low:
+    if x < low:
"""


def test_message_lines_quoting_the_changed_code_are_dropped() -> None:
    messages = {
        "tests/test_calc.py::test_clamp": "TypeError: bad\n    if x <= low:\nE   assert 1 == 0",
        "tests/test_calc.py::test_other": "AssertionError: assert [1, 2] == [1, 2, 3]",
    }
    text = write_problem_statement("calc", list(messages), messages,
                                   forbidden=["if x <= low:", "if x < low:"])
    assert "if x <= low:" not in text and "if x < low:" not in text
    assert not quotes_patch(text, PATCH)
    assert "tests/test_calc.py::test_clamp" in text and "assert [1, 2] == [1, 2, 3]" in text


def test_statements_are_stable_across_runs_and_machines() -> None:
    messages = {"t.py::test_a": "AssertionError: assert <function f at 0x7f00deadbeef> == 3\n  file /tmp/pytest-1/x",
                "t.py::test_b": "assert <test_dicttoo...x7fc6c74de9d0> == <test_dicttoo...x7fc6c74de950>",
                "t.py::test_c": "getattr(<module 'operator' from '/root/.pyenv/versions/3.11.7/lib/python3.11/"
                                "operator.py'>, 'abs')"}
    a = write_problem_statement("p", list(messages), messages)
    assert "0x7f00" not in a and "/tmp/pytest-1" not in a and "x7fc6" not in a and "/root" not in a
    assert "<test_dicttoo...> == <test_dicttoo...>" in a and "'<python>/operator.py'" in a
    elsewhere = {k: v.replace("/root/.pyenv/versions/3.11.7", "/usr").replace("7fc6c74", "55d0e1f")
                 for k, v in messages.items()}
    assert a == write_problem_statement("p", list(messages), elsewhere)


def _inst(project: str, file: str, n: int, function: str | None = None, easy: bool | None = None) -> SweInstance:
    return SweInstance(instance_id=f"{project}-{file}-{function}-{n}", repo=f"pypi/{project}", base_commit="0" * 40,
                       patch="", problem_statement="", FAIL_TO_PASS=["t::a"],
                       mutation=MutationInfo(operator="compare_op", file=file, line=n, function=function,
                                             function_lines=None if easy is None else 5 if easy else 80,
                                             test_names_function=easy))


def test_each_tier_follows_the_shares_and_a_function_never_spans_two_splits() -> None:
    """The easy tier sits in few files: with file groups the test split got 3 of 13 easy instances. Groups
    are functions now, and the shares hold per tier."""
    easy = [_inst("more", f"m{f}.py", n, f"fn{k}", True) for f in range(2) for k in range(40) for n in range(3)]
    hard = [_inst("more", f"m{f}.py", 100 + n, f"big{k}", False) for f in range(2) for k in range(30) for n in range(4)]
    assigned = assign_splits(easy + hard, seed=1)
    for part in (easy, hard):
        counts = Counter(assigned[i.instance_id] for i in part)
        for split, share in (("train", 0.7), ("selection", 0.15), ("test", 0.15)):
            assert abs(counts[split] / len(part) - share) < 0.05, (part[0].tier, counts)
    spans: dict[str, set[str]] = {}
    for inst in easy + hard:
        spans.setdefault(group_key(inst), set()).add(assigned[inst.instance_id])
    assert len(spans) == 140 and all(len(s) == 1 for s in spans.values())


def test_splits_group_by_project_and_file_and_follow_the_shares() -> None:
    instances = [_inst(p, f"m{f}.py", n) for p in ("a", "b", "c") for f in range(6) for n in range(10)]
    assigned = assign_splits(instances, seed=3)
    groups: dict[str, set[str]] = {}
    for inst in instances:
        groups.setdefault(group_key(inst), set()).add(assigned[inst.instance_id])
    assert all(len(s) == 1 for s in groups.values()), "a (project, file) group never spans two splits"
    counts = {s: list(assigned.values()).count(s) for s in ("train", "selection", "test")}
    assert counts["train"] > counts["selection"] > 0 and counts["test"] > 0
    assert abs(counts["train"] / len(instances) - 0.7) < 0.1
    assert assigned == assign_splits(list(reversed(instances)), seed=3), "deterministic"


def test_sandbox_scratch_and_temp_names_never_reach_a_statement() -> None:
    """Two builds of one project gave different statements: temp names from the docker backend's /scratch,
    bare tempfile names and pieces of the session dirs survived the cleaning."""

    def report(scratch: str, name: str, session: str) -> dict[str, str]:
        return {"t.py::test_api": f"AssertionError: assert '{scratch}/{name}/mod.py:1:1: undefined name' == ''",
                "t.py::test_b": f"FileNotFoundError: [Errno 2] No such file or directory: '{name}'",
                "t.py::test_c": f"OSError: cannot open {session}/scratch/{name}",
                "t.py::test_d": f"assert '...ratch/{name}/x' == 'y'"}

    one = write_problem_statement("p", list(report("/scratch", "tmpk2j3_x9q", "")), report(
        "/scratch", "tmpk2j3_x9q", "meta-agent-bwrap-4242-abc123"))
    two = write_problem_statement("p", list(report("/scratch", "tmp0zz81mqa", "")), report(
        "/tmp/meta-agent-bwrap-7-qq/scratch", "tmp0zz81mqa", "/tmp/meta-agent-swe-build-zyx987"))
    for random in ("tmpk2j3_x9q", "tmp0zz81mqa", "4242", "abc123", "zyx987"):
        assert random not in one + two
    assert one == two
    assert "undefined name" in one and "No such file or directory" in one


def test_the_default_set_uses_its_pinned_shares_and_the_docs_say_which() -> None:
    """The default set's sealed splits are wider (60 / 20 / 20) so each holds 50+ easy instances."""
    from pathlib import Path

    from meta_agent.swe.taskset import DEFAULT_SHARES

    easy = [_inst("p", f"m{f}.py", n, f"fn{f}", True) for f in range(100) for n in range(3)]
    counts = Counter(i.split for i in with_splits(easy, seed=0, shares=DEFAULT_SHARES))
    assert counts["selection"] >= 55 and counts["test"] >= 55 and counts["train"] >= 170
    shares = " / ".join(str(round(DEFAULT_SHARES[s] * 100)) for s in ("train", "selection", "test"))
    docs = " ".join((Path(__file__).resolve().parents[2] / "docs" / "swe-tasks.md").read_text().split())
    assert f"the default set's shares are {shares}" in docs
