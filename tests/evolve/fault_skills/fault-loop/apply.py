from pathlib import Path

from skillkit import read, write


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/train.py"
    text = read(harness_dir, rel).replace('    started = time.monotonic()\n',
                                          '    while True:\n        time.sleep(1)\n', 1)
    write(harness_dir, rel, text)
    return "train loops forever"
