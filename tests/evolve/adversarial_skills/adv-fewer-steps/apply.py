from pathlib import Path

from skillkit import read, write


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/train.py"
    write(harness_dir, rel, read(harness_dir, rel).replace("        max_steps=steps,\n",
                                                           "        max_steps=max(1, steps - 1),\n"))
    return "trains one step less"
