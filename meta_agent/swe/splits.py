"""Deterministic train / selection / test assignment, grouped by (project, mutated source file).

All bugs injected into one file of one project land in the same split, so a held-out
task is never a near-copy of a training task (same function, neighbouring line). Groups
are visited in a seeded hash order and each goes to the split furthest below its target
share, which keeps the shares close to the targets even with few, uneven groups.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from meta_agent.swe.instance import SPLITS, Split, SweInstance

DEFAULT_SHARES: dict[Split, float] = {"train": 0.7, "selection": 0.15, "test": 0.15}
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def group_key(instance: SweInstance) -> str:
    """`project::file` of the bug; for imported instances, the first file the gold patch touches."""
    if instance.mutation is not None:
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
    groups: dict[str, list[str]] = {}
    for inst in instances:
        groups.setdefault(group_key(inst), []).append(inst.instance_id)
    order = sorted(groups, key=lambda k: hashlib.sha256(f"{seed}:{k}".encode()).hexdigest())
    counts: dict[Split, int] = dict.fromkeys(SPLITS, 0)
    assigned: dict[str, Split] = {}
    total = 0
    for key in order:
        size = len(groups[key])
        total += size
        split = max(SPLITS, key=lambda s: (shares.get(s, 0.0) * total - counts[s], shares.get(s, 0.0)))
        counts[split] += size
        for instance_id in groups[key]:
            assigned[instance_id] = split
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
            f"instances come from {groups} (project, source file) group(s) and every bug of one file goes to "
            "one split. Build from more projects (or a project with more source files), or import the file "
            "with `--split train|selection|test` to choose.")


def with_splits(instances: list[SweInstance], *, seed: int = 0) -> list[SweInstance]:
    """Copies of the instances with `split` filled in."""
    assigned = assign_splits(instances, seed=seed)
    return [i.model_copy(update={"split": assigned[i.instance_id]}) for i in instances]
