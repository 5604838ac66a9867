"""Turn on the warm start: supervised steps on the train split's demonstrations before GRPO."""

from pathlib import Path

from skillkit import set_setting


def apply(harness_dir: Path, params: dict) -> str:
    steps = int(params.get("steps", 24))
    if not 1 <= steps <= 1000:
        raise ValueError(f"steps {steps} is outside [1, 1000]")
    settings = {"steps": steps, "batch_size": int(params.get("batch_size", 4)),
                "max_demos": int(params.get("max_demos", 48)),
                "learning_rate": float(params.get("learning_rate", 1.0e-4))}
    for key, value in settings.items():
        set_setting(harness_dir, f"warm_start.{key}", value)
    return "warm start: " + ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in settings.items())
