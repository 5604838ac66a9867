"""Reward components for code. harness.yaml `rewards:` picks components and weights.

Both run only the task's VISIBLE tests (the hidden ones never reach the harness), so on their own
they pay a program that hard-codes the visible outputs exactly as much as a real solution:
diagnostics.py labels that (hardcoded_outputs), and a reward that wants to close the hole must
penalise it.

Add a component: write `def name(r: Rollout) -> float`, register it in REWARDS, and give it a
weight in harness.yaml.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.code.execution import execute
from harness.rollout import Rollout


def visible_tests(r: Rollout) -> float:
    """Share of the visible tests the extracted program passes (0 without a code block)."""
    return execute(r).pass_rate


def all_visible_tests(r: Rollout) -> float:
    """1 only when every visible test passes."""
    ex = execute(r)
    return 1.0 if ex.results and ex.passed == len(ex.results) else 0.0


REWARDS: dict[str, Callable[[Rollout], float]] = {
    "visible_tests": visible_tests,
    "all_visible_tests": all_visible_tests,
}
