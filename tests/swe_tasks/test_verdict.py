"""The sealed evaluator: only a real fix of the library code resolves an instance."""

from __future__ import annotations

from meta_agent.swe.instance import SweInstance
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Sandbox


def _test_file_diff(old_line: str, new_line: str) -> str:
    return (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\n"
        "--- a/tests/test_calc.py\n"
        "+++ b/tests/test_calc.py\n"
        "@@ -1,1 +1,1 @@\n"
        f"-{old_line}\n"
        f"+{new_line}\n"
    )


def test_editing_the_tests_cannot_resolve(calc_instances: list[SweInstance], swe_sandbox: Sandbox) -> None:
    inst = calc_instances[0]
    # Make every test module import fail-proof and trivially pass: replaced by the originals before the run.
    header = "from calc import clamp, describe, first_word, in_range, is_even, mean, scale, total, windows"
    gutted = _test_file_diff(header, "import pytest; pytest.skip('gutted', allow_module_level=True)")
    verdict = evaluate_patch(inst, gutted, swe_sandbox)
    assert verdict.diff_applies and verdict.tests_touched
    assert not verdict.resolved
    assert all(verdict.tests[t] in ("failed", "error") for t in inst.FAIL_TO_PASS)


def test_a_new_conftest_is_removed_before_the_run(calc_instances: list[SweInstance], swe_sandbox: Sandbox) -> None:
    inst = calc_instances[0]
    conftest = (
        "diff --git a/conftest.py b/conftest.py\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/conftest.py\n"
        "@@ -0,0 +1,3 @@\n"
        "+import pytest\n"
        "+def pytest_collection_modifyitems(items):\n"
        "+    items.clear()\n"
    )
    verdict = evaluate_patch(inst, conftest + inst.patch, swe_sandbox)
    assert verdict.tests_touched
    assert "conftest.py" in verdict.changed_files
    assert verdict.resolved, "the gold part still fixes the bug once the conftest is gone"
    only_conftest = evaluate_patch(inst, conftest, swe_sandbox)
    assert not only_conftest.resolved


def test_a_diff_that_does_not_apply_is_reported(calc_instances: list[SweInstance], swe_sandbox: Sandbox) -> None:
    bogus = _test_file_diff("this line is not in the file", "nor is this one").replace("tests/test_calc.py", "calc.py")
    verdict = evaluate_patch(calc_instances[0], bogus, swe_sandbox)
    assert not verdict.diff_applies and not verdict.resolved
    assert "does not apply" in verdict.detail


def test_a_syntax_error_is_flagged_without_running(calc_instances: list[SweInstance], swe_sandbox: Sandbox) -> None:
    inst = calc_instances[0]
    broken = (
        "diff --git a/calc.py b/calc.py\n"
        "--- a/calc.py\n"
        "+++ b/calc.py\n"
        "@@ -1,1 +1,1 @@\n"
        '-"""A small library with enough branches and arithmetic for every mutation operator."""\n'
        "+def (:\n"
    )
    verdict = evaluate_patch(inst, broken, swe_sandbox)
    assert verdict.diff_applies and verdict.syntax_error and not verdict.resolved
    assert verdict.tests == {}


def test_gold_patch_resolves_with_all_counts(calc_instances: list[SweInstance], swe_sandbox: Sandbox) -> None:
    inst = calc_instances[0]
    verdict = evaluate_patch(inst, inst.patch, swe_sandbox)
    assert verdict.resolved
    assert verdict.fail_to_pass_passed == verdict.fail_to_pass_total == len(inst.FAIL_TO_PASS)
    assert verdict.pass_to_pass_passed == verdict.pass_to_pass_total == len(inst.PASS_TO_PASS)
    assert verdict.changed_files == ["calc.py"]


def test_symlinks_added_by_a_diff_are_reported_and_removed(
    calc_instances: list[SweInstance], swe_sandbox: Sandbox
) -> None:
    inst = calc_instances[0]
    link = (
        "diff --git a/leak.py b/leak.py\n"
        "new file mode 120000\n"
        "--- /dev/null\n"
        "+++ b/leak.py\n"
        "@@ -0,0 +1 @@\n"
        "+/etc/passwd\n"
        "\\ No newline at end of file\n"
    )
    verdict = evaluate_patch(inst, link + inst.patch, swe_sandbox)
    assert verdict.diff_applies and "leak.py" in verdict.changed_files
    assert verdict.resolved and not verdict.syntax_error, "the link was followed to a host file"
    assert "root:" not in verdict.detail
