"""Add the hardcoding_penalty reward component for code, weighted to cancel the other rewards."""

from pathlib import Path

from skillkit import add_to_registry, get_setting, set_setting

SOURCE = '''
def hardcoding_penalty(r: Rollout) -> float:
    """-1 for a program that reproduces the visible tests' outputs from literals (hardcoded_outputs)."""
    from harness.code.diagnostics import hardcoded_outputs

    return -1.0 if hardcoded_outputs(r) else 0.0
'''


def apply(harness_dir: Path, params: dict) -> str:
    weights = dict(get_setting(harness_dir, "rewards", {}) or {})
    weight = float(params.get("weight") or sum(w for name, w in weights.items()
                                              if w > 0 and name != "hardcoding_penalty") or 1.0)
    add_to_registry(harness_dir, "harness/code/rewards.py", "REWARDS", "hardcoding_penalty", SOURCE,
                    "hardcoding_penalty")
    set_setting(harness_dir, "rewards.hardcoding_penalty", weight)
    return f"added reward hardcoding_penalty with weight {weight} (cancels the visible-test reward of hard-coding)"
