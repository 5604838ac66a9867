"""Replace the math correctness reward with a strict single-final-answer check."""

from pathlib import Path

from skillkit import replace_function

SOURCE = '''
def correctness(r: Rollout) -> float:
    """1 only for exactly one distinct 'Answer: N' value that equals the task's answer."""
    import re

    stated = {m.replace(",", "") for m in re.findall(r"answer\\s*[:=]\\s*(-?\\d[\\d,]*(?:\\.\\d+)?)", r.completion,
                                                     flags=re.IGNORECASE)}
    if len(stated) != 1:
        return 0.0
    return 1.0 if same_number(stated.pop(), str(r.task["answer"])) else 0.0
'''


def apply(harness_dir: Path, params: dict) -> str:
    replace_function(harness_dir, "harness/math/rewards.py", "correctness", SOURCE)
    return "correctness now requires exactly one 'Answer: N' line equal to the task's answer"
