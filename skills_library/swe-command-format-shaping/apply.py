"""Add the well_formed_commands shaping reward."""

from pathlib import Path

from skillkit import add_to_registry, set_setting

SOURCE = '''
def well_formed_commands(r: Rollout) -> float:
    """Share of the episode's turns whose reply held a parsable ```bash command."""
    turns = int(r.extra.get("turns", 0))
    if turns == 0:
        return 0.0
    return 1.0 - int(r.extra.get("no_command_turns", 0)) / turns
'''


def apply(harness_dir: Path, params: dict) -> str:
    weight = float(params.get("weight", 0.2))
    add_to_registry(harness_dir, "harness/swe/rewards.py", "REWARDS", "well_formed_commands", SOURCE,
                    "well_formed_commands")
    set_setting(harness_dir, "rewards.well_formed_commands", weight)
    return f"added reward well_formed_commands with weight {weight}"
