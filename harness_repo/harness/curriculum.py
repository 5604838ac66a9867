"""Curriculum: which training tasks the policy sees, in which order.

`order_tasks` returns exactly `n` tasks (cycling through the pool when n is larger).
Strategies (harness.yaml `curriculum.strategy`):
- shuffle: a seeded shuffle of all tasks.
- easy_first: ascending `difficulty`, shuffled within each level.
- pass_rate: favour tasks whose pass rate in earlier rollouts (`--history`) is neither
  0 nor 1, because GRPO learns nothing from groups that all fail or all pass.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.config import CurriculumSettings
from harness.io import read_jsonl


def pass_rates(history: Path | None) -> dict[str, float]:
    """task_id -> share of earlier rollouts whose reward was positive."""
    if history is None or not history.is_file():
        return {}
    hits: dict[str, list[float]] = defaultdict(list)
    for rec in read_jsonl(history):
        hits[rec["task_id"]].append(1.0 if rec["reward"] > 0 else 0.0)
    return {tid: sum(v) / len(v) for tid, v in hits.items()}


def _cycle(pool: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return [pool[i % len(pool)] for i in range(n)]


def order_tasks(
    tasks: list[dict[str, Any]],
    n: int,
    seed: int,
    settings: CurriculumSettings,
    history: Path | None = None,
) -> list[dict[str, Any]]:
    if not tasks:
        raise SystemExit("no training tasks: the --tasks file is empty")
    rng = random.Random(seed)
    pool = list(tasks)
    rng.shuffle(pool)
    if settings.strategy == "easy_first":
        pool.sort(key=lambda t: t.get("difficulty", 0))
    elif settings.strategy == "pass_rate":
        rates = pass_rates(history)
        # Unseen tasks count as p=0.5: maximally informative until measured.
        pool.sort(key=lambda t: -(rates.get(t["id"], 0.5) * (1 - rates.get(t["id"], 0.5))))
    return _cycle(pool, n)
