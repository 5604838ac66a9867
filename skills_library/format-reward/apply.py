"""Add the format_compliance reward component for math."""

from pathlib import Path

from skillkit import add_to_registry, set_setting

SOURCE = '''
def format_compliance(r: Rollout) -> float:
    """1 when the completion ends its reasoning with an 'Answer: N' line, as the prompt asks."""
    return 1.0 if answer_line(r.completion) is not None else 0.0
'''


def apply(harness_dir: Path, params: dict) -> str:
    weight = float(params.get("weight", 0.2))
    add_to_registry(harness_dir, "harness/math/rewards.py", "REWARDS", "format_compliance", SOURCE,
                    "format_compliance")
    set_setting(harness_dir, "rewards.format_compliance", weight)
    return f"added reward format_compliance with weight {weight}"
