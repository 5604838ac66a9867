"""Add the tests_fixed partial-credit reward."""

from pathlib import Path

from skillkit import add_to_registry, set_setting

SOURCE = '''
def tests_fixed(r: Rollout) -> float:
    """Share of FAIL_TO_PASS tests fixed (original tests restored), minus PASS_TO_PASS breakage, at least 0."""
    t = test_results(r, restore_tests=True)
    if not t["applies"] or t["f2p_total"] == 0:
        return 0.0
    broken = t["p2p_failed"] / t["p2p_total"] if t["p2p_total"] else 0.0
    return max(0.0, t["f2p_passed"] / t["f2p_total"] - broken)
'''


def apply(harness_dir: Path, params: dict) -> str:
    weight = float(params.get("weight", 0.5))
    add_to_registry(harness_dir, "harness/swe/rewards.py", "REWARDS", "tests_fixed", SOURCE, "tests_fixed")
    set_setting(harness_dir, "rewards.tests_fixed", weight)
    return f"added reward tests_fixed (partial credit) with weight {weight}"
