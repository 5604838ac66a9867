"""The view of one rollout that reward functions, filters and diagnostics all read.

Training and `replay` build the same objects, so an unchanged harness re-scores
stored rollouts to exactly the stored rewards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Rollout:
    rollout_id: str
    task: dict[str, Any]
    """The training task (id, prompt, answer, difficulty, metadata)."""
    prompt: str
    completion: str
    completion_tokens: int
    truncated: bool
    """The completion hit max_completion_length (or the episode hit its cap) without finishing."""
    group_id: str
    max_completion_length: int
    extra: dict[str, Any] = field(default_factory=dict)
    """Domain data, e.g. the SWE episode's turns and final diff."""
    verified: bool | None = None
    """The sealed verifier's verdict, added by meta-agent after training; None when unknown."""
    settings: dict[str, Any] = field(default_factory=dict)
    """harness.yaml `domain_settings`, for reward functions and diagnostics that need them."""


@dataclass
class Scored:
    """A rollout after the harness scored it."""

    rollout: Rollout
    rewards: dict[str, float]
    reward: float
    advantage: float = 0.0
    weight: float = 1.0
    labels: list[str] = field(default_factory=list)


def group_by(scored: list[Scored]) -> dict[str, list[Scored]]:
    groups: dict[str, list[Scored]] = {}
    for s in scored:
        groups.setdefault(s.rollout.group_id, []).append(s)
    return groups
