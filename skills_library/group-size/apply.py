"""Re-split a step's completions into groups of `group_size`, keeping completions per step."""

from pathlib import Path

from skillkit import AlreadyApplied, EditError, get_setting, set_setting


def apply(harness_dir: Path, params: dict) -> str:
    size = int(params.get("group_size", 8))
    groups = int(get_setting(harness_dir, "rl.prompts_per_step", 2))
    now = int(get_setting(harness_dir, "rl.num_generations", 4))
    per_step = groups * now
    if size == now:
        raise AlreadyApplied(f"rl.num_generations is already {size}")
    if size < 2:
        raise ValueError(f"group size {size} is below 2: GRPO compares completions within a group")
    if per_step % size:  # this harness's shape, not a bad parameter: "cannot apply", not a traceback
        raise EditError(f"group size {size} does not divide the {per_step} completions per step "
                        f"({groups} prompts x {now})")
    set_setting(harness_dir, "rl.num_generations", size)
    if per_step // size != groups:
        set_setting(harness_dir, "rl.prompts_per_step", per_step // size)
    return f"groups of {now} x {groups} prompts -> {size} x {per_step // size} ({per_step} completions per step)"
