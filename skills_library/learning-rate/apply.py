"""Set the learning rate: the parameter for LoRA, a tenth of it for a full fine-tune."""

from pathlib import Path

from skillkit import get_setting, set_setting


def apply(harness_dir: Path, params: dict) -> str:
    rate = float(params.get("learning_rate", 1.0e-4))
    if rate <= 0 or rate > 1e-2:
        raise ValueError(f"learning_rate {rate} is outside (0, 0.01]")
    lora = bool(get_setting(harness_dir, "policy.lora", True))
    value = rate if lora else rate / 10
    old = set_setting(harness_dir, "rl.learning_rate", value)
    return f"rl.learning_rate {old} -> {value:g}" + ("" if lora else " (full fine-tune: a tenth of the LoRA rate)")
