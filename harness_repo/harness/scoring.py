"""Scores a batch of rollouts: reward components, total, group advantage, filter weight, labels.

Used by training (inside the GRPO step) and by `replay` (without a model), so both
paths compute exactly the same numbers.
"""

from __future__ import annotations

import math

from harness import diagnostics, filters
from harness.config import HarnessConfig
from harness.domain import DomainModule, reward_components
from harness.rollout import Rollout, Scored, group_by


def group_advantages(rewards: list[float], scale: str) -> list[float]:
    """GRPO advantages within one group, as TRL computes them (unbiased std, +1e-4)."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1)) if n > 1 else 0.0
    if scale == "none":
        return [r - mean for r in rewards]
    return [(r - mean) / (std + 1e-4) for r in rewards]


def score_rewards(domain: DomainModule, cfg: HarnessConfig, rollouts: list[Rollout]) -> list[Scored]:
    scored = []
    for r in rollouts:
        parts = reward_components(domain, cfg.rewards, r)
        total = sum(cfg.rewards[name] * value for name, value in parts.items())
        scored.append(Scored(rollout=r, rewards=parts, reward=total))
    return scored


def score_batch(domain: DomainModule, cfg: HarnessConfig, rollouts: list[Rollout]) -> list[Scored]:
    """Rewards, advantages (per group), filter weights and diagnostic labels for a batch."""
    scored = score_rewards(domain, cfg, rollouts)
    for group in group_by(scored).values():
        advs = group_advantages([s.reward for s in group], cfg.rl.scale_rewards)
        for s, a in zip(group, advs, strict=True):
            s.advantage = a
    filters.apply_filters(cfg.filters, scored)
    for s in scored:
        s.advantage *= s.weight
    diagnostics.label_batch(domain, scored)
    return scored
