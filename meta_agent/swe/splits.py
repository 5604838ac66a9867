"""Deterministic train / selection / test assignment, grouped by the function (else the file) of the bug.

All bugs injected into one function of one project land in the same split, so a held-out task is never a
near-copy of a training task (same function, neighbouring line). Grouping by function rather than by file
loses nothing the file would protect: a train task is a checkout of the whole project, so its other files
are seen in training either way. It lets the shares be met per difficulty tier: the easy tier sits in few
files (more-itertools' short functions are two files), and file groups gave the test split 3 of 13 easy
instances. Groups are visited in a seeded hash order and each goes to the split furthest below its target
share, counted per tier and weighted by the group's tiers, so every tier follows the shares.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

from meta_agent.swe.instance import SPLITS, Split, SweInstance

DEFAULT_SHARES: dict[Split, float] = {"train": 0.7, "selection": 0.15, "test": 0.15}
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def group_key(instance: SweInstance) -> str:
    """`project::file::function` of the bug (`project::file` for a bug outside any function, or built before
    functions were recorded); for imported instances, the first file the gold patch touches."""
    if instance.mutation is not None:
        if instance.mutation.function:
            return f"{instance.project}::{instance.mutation.file}::{instance.mutation.function}"
        file = instance.mutation.file
    else:
        found = _DIFF_FILE.search(instance.patch)
        file = found.group(1) if found else ""
    return f"{instance.project}::{file}"


def assign_splits(
    instances: Iterable[SweInstance], *, shares: dict[Split, float] | None = None, seed: int = 0
) -> dict[str, Split]:
    """instance_id -> split; the same instances, shares and seed always give the same answer."""
    shares = shares or DEFAULT_SHARES
    if set(shares) - set(SPLITS) or abs(sum(shares.values()) - 1.0) > 1e-6:
        raise ValueError(f"split shares must be over {SPLITS} and sum to 1, got {shares}")
    groups: dict[str, list[SweInstance]] = {}
    for inst in instances:
        groups.setdefault(group_key(inst), []).append(inst)
    order = sorted(groups, key=lambda k: hashlib.sha256(f"{seed}:{k}".encode()).hexdigest())
    counts: Counter[tuple[Split, str]] = Counter()
    totals: Counter[str] = Counter()
    assigned: dict[str, Split] = {}
    for key in order:
        tiers = Counter(str(inst.tier) for inst in groups[key])
        totals.update(tiers)

        def deficit(s: Split, tiers: Counter[str] = tiers) -> tuple[float, float]:
            share = shares.get(s, 0.0)
            return sum(n * (share * totals[t] - counts[(s, t)]) for t, n in tiers.items()), share

        split = max(SPLITS, key=deficit)
        counts.update({(split, t): n for t, n in tiers.items()})
        for inst in groups[key]:
            assigned[inst.instance_id] = split
    return assigned


def empty_split_warning(instances: list[SweInstance]) -> str:
    """A sentence for the user when some split got no instance; empty when every split has one."""
    if not instances:
        return ""
    empty = [s for s in SPLITS if not any(i.split == s for i in instances)]
    if not empty:
        return ""
    groups = len({group_key(i) for i in instances})
    return (f"split {' and '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty: the {len(instances)} "
            f"instances come from {groups} (project, file, function) group(s) and every bug of one function goes "
            "to one split. Build from more projects (or a project with more functions), or import the file "
            "with `--split train|selection|test` to choose.")


def with_splits(instances: list[SweInstance], *, seed: int = 0,
                shares: dict[Split, float] | None = None) -> list[SweInstance]:
    """Copies of the instances with `split` filled in."""
    assigned = assign_splits(instances, seed=seed, shares=shares)
    return [i.model_copy(update={"split": assigned[i.instance_id]}) for i in instances]
