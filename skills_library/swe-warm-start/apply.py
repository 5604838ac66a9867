"""Turn on the warm start: supervised steps on the train split's demonstrations before GRPO.

A demonstration needs 4 or 5 turns (find, read, read on past a long docstring where one hides the bug's
line, edit, submit) of up to 48 tokens (a one-line fix is a `sed` substitution on the numbered line); under
a smaller turn budget every one is left out, so the budget is raised to 5 where it is lower. 5 x 48 stays
within twice the template's 3 x 48, which the backtest's compute check allows."""

from pathlib import Path

from skillkit import get_setting, set_setting

TURNS, TURN_TOKENS = 5, 48


def apply(harness_dir: Path, params: dict) -> str:
    steps = int(params.get("steps", 340))
    if not 1 <= steps <= 1000:
        raise ValueError(f"steps {steps} is outside [1, 1000]")
    batch_size, max_demos = int(params.get("batch_size", 1)), int(params.get("max_demos", 170))
    if not 1 <= batch_size <= 256 or not 1 <= max_demos <= 100_000:
        raise ValueError(f"batch_size {batch_size} or max_demos {max_demos} is out of range")
    # The steps are sized for max_demos demonstrations (340 of one: two passes over 170, every easy train
    # instance of the default set); where the task set yields fewer, the harness cuts them to as many
    # passes, not more passes over fewer.
    passes = round(steps * batch_size / max_demos, 3)
    settings = {"steps": steps, "batch_size": batch_size,  # demonstrations per step
                "max_demos": max_demos, "passes": passes,
                "learning_rate": float(params.get("learning_rate", 3.0e-4))}
    set_setting(harness_dir, "warm_start.steps", steps)  # says "already applied" when it is
    for key, value in settings.items():
        if key != "steps" and get_setting(harness_dir, f"warm_start.{key}") != value:
            set_setting(harness_dir, f"warm_start.{key}", value)
    done = ["warm start: " + ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                                        for k, v in settings.items())]
    per_pass = get_setting(harness_dir, "rl.micro_batch_size")
    if per_pass is None or int(per_pass) > 1:  # the examples' memory: SKILL.md "Pitfalls"
        set_setting(harness_dir, "rl.micro_batch_size", 1)
        done.append("rl.micro_batch_size 1 (one example per pass: the same steps in less memory)")
    for key, least in (("max_turns", TURNS), ("turn_tokens", TURN_TOKENS)):
        old = int(get_setting(harness_dir, f"domain_settings.{key}", 0) or 0)
        if old < least:
            set_setting(harness_dir, f"domain_settings.{key}", least)
            done.append(f"domain_settings.{key} {old} -> {least} (a demonstration must fit)")
    return "; ".join(done)
