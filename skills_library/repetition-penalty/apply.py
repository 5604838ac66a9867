"""Add the repetition_penalty reward component."""

from pathlib import Path

from skillkit import add_to_registry, get_setting, set_setting

SOURCE = '''
def repetition_penalty(r: Rollout) -> float:
    """Minus the share of repeated word 3-grams: degenerate loops score close to -1."""
    from harness.diagnostics import repetition_share

    return -repetition_share(r.completion)
'''


def apply(harness_dir: Path, params: dict) -> str:
    weight = float(params.get("weight", 0.5))
    domain = get_setting(harness_dir, "domain")
    add_to_registry(harness_dir, f"harness/{domain}/rewards.py", "REWARDS", "repetition_penalty", SOURCE,
                    "repetition_penalty")
    set_setting(harness_dir, "rewards.repetition_penalty", weight)
    return f"added reward repetition_penalty with weight {weight}"
