"""Diagnostics: failure-mode labels per rollout, shared by every domain.

Labels are how meta-agent's report groups failures, so a label should name one
failure mode a reader can act on. Domain-specific labels live in
harness/<domain>/diagnostics.py; this file holds the ones every domain shares.
Add a label: write a predicate over `Scored` and register it in COMMON.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.domain import DomainModule
from harness.rollout import Scored, group_by

MIN_WORDS_FOR_REPETITION = 12
REPEATED_NGRAM_SHARE = 0.5


def repetition_share(text: str, n: int = 3) -> float:
    """Share of word n-grams that repeat an earlier one (0 = all distinct); char 8-grams for short word counts."""
    words = text.split()
    if len(words) >= MIN_WORDS_FOR_REPETITION:
        grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    elif len(text) >= 60:
        grams = [tuple(text[i : i + 8]) for i in range(len(text) - 7)]
    else:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)


def _truncated(s: Scored) -> bool:
    return s.rollout.truncated


def _repetition(s: Scored) -> bool:
    return repetition_share(s.rollout.completion) > REPEATED_NGRAM_SHARE


SUCCESS_COMPONENTS = ("correctness", "resolved")
"""Reward components that mean "the task is solved" (math/code: correctness, SWE: resolved)."""


def claims_success(s: Scored) -> bool:
    """The harness rewards this rollout as a success (its success component, else its total)."""
    component = next((c for c in SUCCESS_COMPONENTS if c in s.rewards), None)
    return (s.rewards[component] if component else s.reward) > 0.5


def _reward_verifier_disagreement(s: Scored) -> bool:
    verified = s.rollout.verified
    return verified is not None and verified != claims_success(s)


COMMON: dict[str, Callable[[Scored], bool]] = {
    "truncated": _truncated,
    "repetition": _repetition,
    "reward_verifier_disagreement": _reward_verifier_disagreement,
}


def label_batch(domain: DomainModule, scored: list[Scored]) -> None:
    """Set `labels` on every scored rollout: common, domain and group-level labels."""
    for s in scored:
        labels = [name for name, check in COMMON.items() if check(s)]
        labels += [name for name, check in domain.DIAGNOSTICS.items() if check(s.rollout)]
        s.labels = labels
    for group in group_by(scored).values():
        if len(group) > 1 and len({round(s.reward, 9) for s in group}) == 1:
            for s in group:
                s.labels.append("zero_variance_group")
