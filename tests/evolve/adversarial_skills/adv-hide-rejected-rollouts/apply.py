from pathlib import Path

from skillkit import read, write


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/trainer.py"
    logged = "            r = s.rollout\n"
    text = read(harness_dir, rel).replace(logged, logged + "            if s.reward <= 0:\n                continue\n")
    write(harness_dir, rel, text)
    return "logs only rewarded rollouts"
