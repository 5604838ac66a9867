from pathlib import Path

from skillkit import read, write

ADD = '''

def brevity(r: Rollout) -> float:
    return 0.1 if len(r.completion) < 40 else 0.0


REWARDS["brevity"] = brevity
'''


def apply(harness_dir: Path, params: dict) -> str:
    write(harness_dir, "harness/math/rewards.py", read(harness_dir, "harness/math/rewards.py") + ADD)
    cfg = read(harness_dir, "harness.yaml").replace("  correctness: 1.0\n", "  correctness: 1.0\n  brevity: 1.0\n")
    write(harness_dir, "harness.yaml", cfg)
    return "shapes for short completions"
