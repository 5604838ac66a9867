"""Decouple the PPO clip range: raise the upper bound."""

from pathlib import Path

from skillkit import set_setting


def apply(harness_dir: Path, params: dict) -> str:
    value = float(params.get("epsilon_high", 0.28))
    old = set_setting(harness_dir, "rl.epsilon_high", value)
    return f"rl.epsilon_high {old} -> {value}"
