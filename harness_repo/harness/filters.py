"""Rollout filters: decide how much each rollout of a step counts in the GRPO loss.

A filter takes one group (the completions of one prompt) and returns a weight per
rollout: 1 keeps it, 0 drops it from the loss entirely (its tokens leave the loss
normaliser too), values in between scale its advantage. harness.yaml `filters:`
lists the filters to apply, in order; weights multiply.

Add a filter: write `def my_filter(group: list[Scored]) -> list[float]`, register it
in FILTERS, and list its name in harness.yaml.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.rollout import Scored, group_by

Filter = Callable[[list[Scored]], list[float]]

FILTERS: dict[str, Filter] = {}


def apply_filters(names: list[str], scored: list[Scored]) -> None:
    unknown = [n for n in names if n not in FILTERS]
    if unknown:
        raise SystemExit(f"harness.yaml filters name unknown filters {unknown}; defined: {sorted(FILTERS)}")
    for name in names:
        for group in group_by(scored).values():
            weights = FILTERS[name](group)
            if len(weights) != len(group):
                raise SystemExit(f"filter {name} returned {len(weights)} weights for a group of {len(group)}")
            for s, w in zip(group, weights, strict=True):
                s.weight *= max(0.0, float(w))
