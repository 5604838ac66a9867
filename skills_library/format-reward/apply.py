"""Add the format_compliance reward component for math."""

from pathlib import Path

from skillkit import add_to_registry, set_setting

SOURCE = '''
def format_compliance(r: Rollout) -> float:
    """1 when the completion commits to one 'Answer: N' value, as the prompt asks (hedging earns nothing)."""
    import re

    stated = set(re.findall(r"answer\\s*[:=]\\s*(-?\\d[\\d,]*(?:\\.\\d+)?)", r.completion, flags=re.IGNORECASE))
    return 1.0 if len(stated) == 1 else 0.0
'''


def apply(harness_dir: Path, params: dict) -> str:
    weight = float(params.get("weight", 0.2))
    add_to_registry(harness_dir, "harness/math/rewards.py", "REWARDS", "format_compliance", SOURCE,
                    "format_compliance")
    set_setting(harness_dir, "rewards.format_compliance", weight)
    return f"added reward format_compliance with weight {weight}"
