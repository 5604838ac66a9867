"""A skill's parameter variants, and which of them a run has tried and how they did.

A skill with `param_ranges` is a small search space: its defaults first, then every combination of the
listed values. The offline proposer tries a skill's defaults once its triggers fire, and comes back to
the other variants when it has no untried skill left, most promising skill first (what its tried
variants measured) and, within a skill, the untried variant nearest the best one tried so far.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from meta_agent.journal import VerdictRecorded
from meta_agent.skills.model import SkillMeta

MAX_VARIANTS = 16
"""Variants per skill, defaults included: the rest of a larger product of ranges is never proposed."""


def key(params: dict[str, Any]) -> str:
    """A variant's identity: its parameters as canonical JSON (1e-4 and 0.0001 are the same variant)."""
    return json.dumps(params, sort_keys=True, default=str)


def variants(meta: SkillMeta) -> list[dict[str, Any]]:
    """The skill's defaults, then each combination of its ranges (in the order listed), without repeats."""
    out = [dict(meta.params)]
    seen = {key(meta.params)}
    names = list(meta.param_ranges)
    for values in itertools.product(*(meta.param_ranges[n] for n in names)):
        params = {**meta.params, **dict(zip(names, values, strict=True))}
        if key(params) not in seen:
            seen.add(key(params))
            out.append(params)
        if len(out) == MAX_VARIANTS:
            break
    return out


def params_of(params: dict[str, Any], skills: list[str], name: str) -> dict[str, Any]:
    """The parameters skill `name` used in a hypothesis: a recipe (several skills applied together, see
    agents/skills_proposer.py) keeps each skill's under its name; a one-skill hypothesis's are its own."""
    if len(skills) > 1 and isinstance(params.get(name), dict):
        return dict(params[name])
    return dict(params)


@dataclass(frozen=True)
class Tried:
    """One verdict of this run on a variant of a skill."""

    params: dict[str, Any]
    verdict: str
    delta: float | None


def tried_in(history: Sequence[VerdictRecorded], meta: SkillMeta) -> list[Tried]:
    """The run's verdicts on the skill, each with the variant it used (a record written before variants
    existed, or of a skill without parameters, used the skill's defaults)."""
    out = []
    for h in history:
        if meta.name in h.skills and h.verdict in ("promoted", "rejected"):
            params = params_of(h.params, h.skills, meta.name) or dict(meta.params)
            out.append(Tried(params=params, verdict=h.verdict, delta=h.delta))
    return out


def promise(tried: list[Tried]) -> float:
    """How promising a tried skill is: a promotion beats any delta, a delta beats none."""
    if any(t.verdict == "promoted" for t in tried):
        return 2.0
    deltas = [t.delta for t in tried if t.delta is not None]
    return max(deltas) if deltas else -2.0


def next_variant(meta: SkillMeta, tried: list[Tried]) -> dict[str, Any] | None:
    """The untried variant nearest (in range positions) the best tried one; None when all were tried."""
    done = {key(t.params) for t in tried}
    pool = [v for v in variants(meta) if key(v) not in done]
    if not pool:
        return None
    if not tried:
        return pool[0]
    best = max(tried, key=lambda t: (t.verdict == "promoted", t.delta if t.delta is not None else -2.0))

    def distance(v: dict[str, Any]) -> int:
        d = 0
        for name, values in meta.param_ranges.items():
            index = {key({"v": x}): i for i, x in enumerate(values)}
            here = index.get(key({"v": v.get(name)}), 0)
            there = index.get(key({"v": best.params.get(name)}), 0)
            d += abs(here - there)
        return d

    return min(pool, key=distance)  # ties: the earlier variant (min is stable)
