"""Add the overlong_penalty reward component (soft overlong punishment)."""

from pathlib import Path

from skillkit import add_to_registry, get_setting, set_setting

SOURCE = '''
def overlong_penalty(r: Rollout) -> float:
    """0 until the last {buffer:.0%} of the length budget, then linearly down to -1 at the limit."""
    limit = r.max_completion_length
    start = limit * (1 - {buffer})
    if r.truncated or r.completion_tokens >= limit:
        return -1.0
    if r.completion_tokens <= start:
        return 0.0
    return -(r.completion_tokens - start) / (limit - start)
'''


def apply(harness_dir: Path, params: dict) -> str:
    buffer = float(params.get("buffer_fraction", 0.25))
    weight = float(params.get("weight", 0.5))
    domain = get_setting(harness_dir, "domain")
    source = SOURCE.replace("{buffer:.0%}", f"{buffer:.0%}").replace("{buffer}", repr(buffer))
    add_to_registry(harness_dir, f"harness/{domain}/rewards.py", "REWARDS", "overlong_penalty", source,
                    "overlong_penalty")
    set_setting(harness_dir, "rewards.overlong_penalty", weight)
    return f"added reward overlong_penalty (buffer {buffer:.0%}) with weight {weight}"
