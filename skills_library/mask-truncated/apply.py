"""Mask truncated completions out of the GRPO loss."""

from pathlib import Path

from skillkit import set_setting


def apply(harness_dir: Path, params: dict) -> str:
    set_setting(harness_dir, "rl.mask_truncated_completions", True)
    return "rl.mask_truncated_completions -> true"
