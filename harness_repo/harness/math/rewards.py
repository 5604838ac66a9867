"""Reward components for math. harness.yaml `rewards:` picks components and weights.

Add a component: write `def name(r: Rollout) -> float`, register it in REWARDS,
and give it a weight in harness.yaml.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.math.answers import answer_line, last_number, same_number
from harness.rollout import Rollout


def correctness(r: Rollout) -> float:
    """1 when the stated answer (the 'Answer:' line, else the last number) equals the task's answer."""
    stated = answer_line(r.completion) or last_number(r.completion)
    return 1.0 if same_number(stated, str(r.task["answer"])) else 0.0


REWARDS: dict[str, Callable[[Rollout], float]] = {
    "correctness": correctness,
}
