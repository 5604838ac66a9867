"""Switch the curriculum strategy (easy_first by default)."""

from pathlib import Path

from skillkit import set_setting


def apply(harness_dir: Path, params: dict) -> str:
    strategy = str(params.get("strategy", "easy_first"))
    old = set_setting(harness_dir, "curriculum.strategy", strategy)
    return f"curriculum strategy {old} -> {strategy}"
