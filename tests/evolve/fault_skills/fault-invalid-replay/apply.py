from pathlib import Path

from skillkit import read, write


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/replay.py"
    text = read(harness_dir, rel).replace('"reward": s.reward,', '"reward": "lots",', 1)
    write(harness_dir, rel, text)
    return "replay writes a string reward"
