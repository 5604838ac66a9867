from pathlib import Path

from skillkit import read, write


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/math/rewards.py"
    write(harness_dir, rel, read(harness_dir, rel) + "\nimport module_that_does_not_exist  # noqa\n")
    return "imports a missing module"
