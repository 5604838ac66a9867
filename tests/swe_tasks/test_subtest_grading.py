"""A test with any failed report (a unittest subTest's, setup's, teardown's) is failed, as plain pytest says.

The `units` project checks everything inside `subTest` blocks, where pytest reports each
failed subtest and then the test's own "passed": grading must keep the failure.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from meta_agent.swe.checkout import checkout, repo_path
from meta_agent.swe.env import env_mounts
from meta_agent.swe.instance import SweInstance, TestSetup
from meta_agent.swe.project import ProjectRepo
from meta_agent.swe.testrun import GradingError, run_tests
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Sandbox
from tests.swe_tasks.swe_test_projects import UNITS_FILES, write_tree

pytestmark = pytest.mark.slow  # builds task sets with real pytest runs in the sandbox

KNOWN_BUG = "tests/test_units.py::TestGrade::test_known_bug_at_base"
CLAMP = "tests/test_units.py::TestPercent::test_clamp"


def _plain_pytest(root: Path, node_ids: list[str]) -> int:
    """pytest's exit status for these tests, run the ordinary way (no sandbox, no meta-agent runner)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *node_ids]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120).returncode


def test_the_runner_fails_a_test_whose_subtest_failed(swe_sandbox: Sandbox, swe_env: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "units", UNITS_FILES)
    with swe_sandbox.open(root, mounts=env_mounts(swe_env)) as session:
        report = run_tests(session, root, TestSetup(), files=["tests/test_units.py"], timeout=120, env=swe_env)
    assert report.outcome(KNOWN_BUG) == "failed"
    assert "49.5" in report.tests[KNOWN_BUG].message or "pass" in report.tests[KNOWN_BUG].message
    assert report.passed() == {t for t in report.tests if t != KNOWN_BUG}
    assert report.exit_code == 1 and _plain_pytest(root, [KNOWN_BUG]) == 1


def test_bugs_only_a_subtest_sees_are_kept(units_instances: list[SweInstance]) -> None:
    assert len(units_instances) >= 4, "every assertion is in a subTest: without subtest grading nothing is kept"
    assert len({t for i in units_instances for t in i.FAIL_TO_PASS}) >= 3


def test_a_test_failing_a_subtest_at_the_base_is_never_graded(units_instances: list[SweInstance]) -> None:
    for inst in units_instances:
        assert KNOWN_BUG not in inst.PASS_TO_PASS + inst.FAIL_TO_PASS, inst.instance_id


def test_fail_to_pass_and_pass_to_pass_agree_with_plain_pytest(
    units_instances: list[SweInstance], tmp_path: Path
) -> None:
    for inst in units_instances:
        tree = checkout(inst, tmp_path / inst.instance_id)
        assert _plain_pytest(tree, inst.PASS_TO_PASS) == 0, f"{inst.instance_id}: a PASS_TO_PASS test fails"
        for test in inst.FAIL_TO_PASS:
            assert _plain_pytest(tree, [test]) == 1, f"{inst.instance_id}: {test} passes under the bug"


def _gold_plus_regression(inst: SweInstance, tmp: Path) -> str:
    """The gold fix, plus one line that breaks clamp_percent(150), which only a subtest of test_clamp checks."""
    buggy = (checkout(inst, tmp / "buggy") / "units.py").read_text()
    fixed = ProjectRepo(repo_path(inst)).read(inst.environment_setup_commit, "units.py")
    regressed = fixed.replace("        return 100\n", "        return 99\n")
    assert regressed != fixed
    return "".join(difflib.unified_diff(buggy.splitlines(keepends=True), regressed.splitlines(keepends=True),
                                        "a/units.py", "b/units.py"))


def test_a_fix_that_breaks_what_a_subtest_checks_is_not_resolved(
    units_instances: list[SweInstance], swe_sandbox: Sandbox, tmp_path: Path
) -> None:
    inst = next(i for i in units_instances if CLAMP in i.PASS_TO_PASS)
    assert evaluate_patch(inst, inst.patch, swe_sandbox).resolved
    verdict = evaluate_patch(inst, _gold_plus_regression(inst, tmp_path), swe_sandbox)
    assert verdict.diff_applies
    assert verdict.fail_to_pass_passed == verdict.fail_to_pass_total, "the bug itself is fixed"
    assert verdict.tests[CLAMP] == "failed"
    assert not verdict.resolved


@pytest.mark.parametrize(("hook", "said"), [
    ("session.exitstatus = 0", "exited 0"),
    ("session.exitstatus = 1", "exited 1"),
])
def test_the_runner_refuses_to_grade_when_the_exit_status_disagrees(
    swe_sandbox: Sandbox, swe_env: Path, tmp_path: Path, hook: str, said: str
) -> None:
    root = write_tree(tmp_path / "units", UNITS_FILES)
    (root / "conftest.py").write_text(f"def pytest_sessionfinish(session):\n    {hook}\n")
    select = [KNOWN_BUG] if said == "exited 0" else [CLAMP]
    with swe_sandbox.open(root, mounts=env_mounts(swe_env)) as session, \
            pytest.raises(GradingError, match=said) as refused:
        run_tests(session, root, TestSetup(), select=select, timeout=120, env=swe_env)
    assert "refusing to grade" in str(refused.value)
