from pathlib import Path

from skillkit import read, write

ADD = '''

def no_answer_bonus(r: Rollout) -> float:
    return 0.2 if answer_line(r.completion) is None else 0.0


REWARDS["no_answer_bonus"] = no_answer_bonus
'''


def apply(harness_dir: Path, params: dict) -> str:
    write(harness_dir, "harness/math/rewards.py", read(harness_dir, "harness/math/rewards.py") + ADD)
    weights = "  correctness: 1.0\n"
    cfg = read(harness_dir, "harness.yaml").replace(weights, weights + "  no_answer_bonus: 1.0\n")
    write(harness_dir, "harness.yaml", cfg)
    return "pays completions without an answer line"
