"""Math failure-mode labels (the shared ones are in harness/diagnostics.py)."""

from __future__ import annotations

from collections.abc import Callable

from harness.math.answers import answer_line, last_number
from harness.rollout import Rollout


def format_violation(r: Rollout) -> bool:
    """No 'Answer: N' line, which the prompt asks for."""
    return answer_line(r.completion) is None


def answer_not_extractable(r: Rollout) -> bool:
    """No number anywhere in the completion."""
    return last_number(r.completion) is None


DIAGNOSTICS: dict[str, Callable[[Rollout], bool]] = {
    "format_violation": format_violation,
    "answer_not_extractable": answer_not_extractable,
}
