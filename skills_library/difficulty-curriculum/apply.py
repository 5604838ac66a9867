"""Switch the curriculum strategy (pass_rate by default)."""

from pathlib import Path

from skillkit import set_setting


def apply(harness_dir: Path, params: dict) -> str:
    strategy = str(params.get("strategy", "pass_rate"))
    old = set_setting(harness_dir, "curriculum.strategy", strategy)
    return f"curriculum strategy {old} -> {strategy}"
