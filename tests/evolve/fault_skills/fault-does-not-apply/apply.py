from pathlib import Path

from skillkit import replace_function


def apply(harness_dir: Path, params: dict) -> str:
    replace_function(harness_dir, "harness/math/rewards.py", "function_that_does_not_exist", "def x():\n    pass\n")
    return "unreachable"
