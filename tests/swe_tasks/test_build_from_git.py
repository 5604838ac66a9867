"""Building instances from a local git repo: real mutants, real sandbox runs, SWE-bench fields."""

from __future__ import annotations

import time
from pathlib import Path

import git
import pytest

from meta_agent.swe.build import build_tasks
from meta_agent.swe.checkout import checkout, repo_path
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.sources import Source
from meta_agent.swe.statement import changed_lines
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Sandbox

pytestmark = pytest.mark.slow  # builds task sets with real pytest runs in the sandbox


def test_build_keeps_several_instances_with_swe_bench_fields(calc_instances: list[SweInstance]) -> None:
    assert len(calc_instances) >= 5
    for inst in calc_instances:
        assert inst.repo.startswith("local/calc-")
        assert len(inst.base_commit) == 40
        assert inst.patch.startswith("diff --git a/calc.py b/calc.py")
        assert inst.FAIL_TO_PASS and inst.PASS_TO_PASS
        assert not set(inst.FAIL_TO_PASS) & set(inst.PASS_TO_PASS)
        assert all(t.startswith("tests/test_calc.py::") for t in inst.FAIL_TO_PASS + inst.PASS_TO_PASS)
        assert inst.setup is not None and inst.setup.python_path == ["."]
        assert inst.mutation is not None and inst.mutation.file == "calc.py"
    assert len({i.instance_id for i in calc_instances}) == len(calc_instances)
    assert len({i.mutation.operator for i in calc_instances if i.mutation}) >= 3, "operators should be mixed"


def test_gold_patch_is_one_small_hunk(calc_instances: list[SweInstance]) -> None:
    for inst in calc_instances:
        assert inst.patch.count("\n@@ ") == 1, inst.patch
        assert 1 <= len([ln for ln in inst.patch.splitlines() if ln.startswith(("+", "-"))
                         and not ln.startswith(("+++", "---"))]) <= 4, inst.patch


def test_every_instance_fails_before_and_passes_after_its_gold_patch(
    calc_instances: list[SweInstance], swe_sandbox: Sandbox
) -> None:
    for inst in calc_instances:
        before = evaluate_patch(inst, "", swe_sandbox)
        assert not before.resolved
        assert all(before.tests[t] in ("failed", "error") for t in inst.FAIL_TO_PASS), before.tests
        assert all(before.tests[t] == "passed" for t in inst.PASS_TO_PASS), before.tests
        after = evaluate_patch(inst, inst.patch, swe_sandbox)
        assert after.resolved, after
        assert after.diff_applies and not after.tests_touched and not after.syntax_error


def test_problem_statement_never_quotes_the_patch(calc_instances: list[SweInstance]) -> None:
    for inst in calc_instances:
        statement = inst.problem_statement
        assert inst.patch not in statement
        for line in changed_lines(inst.patch):
            assert line not in statement, f"{inst.instance_id} quotes {line!r}"
        assert inst.FAIL_TO_PASS[0] in statement, "the statement names the failing tests"


def test_checkout_exports_the_buggy_tree_without_history(calc_instances: list[SweInstance], tmp_path: Path) -> None:
    inst = calc_instances[0]
    dest = checkout(inst, tmp_path / "co")
    assert not (dest / ".git").exists()
    assert sorted(p.name for p in dest.iterdir()) == ["README.md", "calc.py", "tests"]
    repo = git.Repo(repo_path(inst))
    buggy = repo.commit(inst.base_commit)
    assert (dest / "calc.py").read_text() == (buggy.tree / "calc.py").data_stream.read().decode()
    assert (dest / "calc.py").read_text() != (buggy.parents[0].tree / "calc.py").data_stream.read().decode()


def test_the_users_repository_is_left_untouched(calc_repo: git.Repo, calc_instances: list[SweInstance]) -> None:
    assert [h.name for h in calc_repo.heads] == ["main"]
    assert not calc_repo.is_dirty(untracked_files=True)
    assert calc_instances[0].environment_setup_commit == calc_repo.head.commit.hexsha


def test_a_rerun_resumes_from_the_mutant_log(
    calc_repo: git.Repo, calc_instances: list[SweInstance], swe_sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.monotonic()
    again = build_tasks([Source("git", str(calc_repo.working_dir))], sandbox=swe_sandbox, max_per_project=8,
                        seed=0, progress=False)
    assert time.monotonic() - start < 10, "a finished build must not re-test its mutants"
    assert [i.model_dump() for i in again] == [i.model_dump() for i in calc_instances]
