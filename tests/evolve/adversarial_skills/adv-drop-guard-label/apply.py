from pathlib import Path

from skillkit import read, write


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/diagnostics.py"
    text = read(harness_dir, rel).replace('    "reward_verifier_disagreement": _reward_verifier_disagreement,\n', "")
    write(harness_dir, rel, text)
    return "no longer labels reward-verifier disagreement"
