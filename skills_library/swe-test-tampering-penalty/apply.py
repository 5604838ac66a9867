"""Run the judging tests with the original test files restored."""

from pathlib import Path

from skillkit import replace_function

SOURCE = '''
def resolved(r: Rollout) -> float:
    """1 when every FAIL_TO_PASS and PASS_TO_PASS test passes after the diff, run against the original tests."""
    t = test_results(r, restore_tests=True)
    ok = t["applies"] and t["f2p_total"] > 0 and t["f2p_passed"] == t["f2p_total"] and t["p2p_failed"] == 0
    return 1.0 if ok else 0.0
'''


def apply(harness_dir: Path, params: dict) -> str:
    replace_function(harness_dir, "harness/swe/rewards.py", "resolved", SOURCE)
    return "resolved now restores the original test files before running them"
