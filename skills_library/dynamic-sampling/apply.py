"""Register and enable the drop_zero_variance rollout filter."""

from pathlib import Path

from skillkit import add_to_list_setting, add_to_registry

SOURCE = '''
def drop_zero_variance(group: list[Scored]) -> list[float]:
    """Dynamic sampling: a group whose rewards are all equal has no GRPO signal, so it leaves the loss."""
    flat = len(group) > 1 and len({round(s.reward, 9) for s in group}) == 1
    return [0.0 if flat else 1.0 for _ in group]
'''


def apply(harness_dir: Path, params: dict) -> str:
    add_to_registry(harness_dir, "harness/filters.py", "FILTERS", "drop_zero_variance", SOURCE, "drop_zero_variance")
    add_to_list_setting(harness_dir, "filters", "drop_zero_variance")
    return "added filter drop_zero_variance (weight 0 for zero-variance groups) and enabled it"
