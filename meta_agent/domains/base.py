"""The Domain protocol and the typed results of a sealed evaluation."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from meta_agent.contract import RolloutRecord, Task
from meta_agent.stats import Interval, bootstrap_ci

Split = Literal["train", "selection", "test"]
Shard = tuple[int, int]
"""(i, n): the i-th of n consecutive slices of an evaluation's tasks."""
T = TypeVar("T")


class TaskResult(BaseModel):
    task_id: str
    correct: bool
    score: float = Field(description="1.0/0.0 for pass/fail domains; partial credit where defined")
    completion: str = ""
    answer: str = Field("", description="SWE: the episode's final diff, as graded (a predictions file's model_patch)")
    detail: str = ""


class EvalResult(BaseModel):
    domain: str
    split: Split
    policy: str
    score: Interval
    results: list[TaskResult]
    wall_time: float
    reused_from: str | None = None
    """The policy these answers were decoded for, when this policy's weights are the same and the answers
    were reused (`meta_agent.eval_memo`); None when this evaluation decoded them."""

    def answered(self) -> int:
        """Tasks with a non-empty answer; on SWE, episodes that left a diff (resolved or not)."""
        return sum(1 for r in self.results if r.answer.strip())

    def per_task(self) -> dict[str, float]:
        return {r.task_id: r.score for r in self.results}


class Domain(Protocol):
    """Task source + sealed verifier + fixed evaluation protocol for one kind of task."""

    name: str
    invalid_labels: tuple[str, ...]
    """Diagnostic labels that mark a rollout as invalid (a candidate whose rollouts carry more is not promoted)."""

    def tasks(self, split: Split) -> list[Task]:
        """The tasks of a split; deterministic across calls and machines."""
        ...

    def export_train(self, inputs_dir: Path) -> list[Task]:
        """The train split as handed to the harness, after writing any files its tasks point at
        (e.g. SWE repository archives) into `inputs_dir`. Nothing of a sealed split goes there."""
        ...

    def verify(self, task: Task, rollout: RolloutRecord) -> bool:
        """The sealed verifier's verdict on one training rollout (its completion, or for SWE its diff)."""
        ...

    def evaluate(
        self, policy: Path, split: Split, *, limit: int | None = None, root: Path | None = None,
        on_progress: Callable[[int], None] | None = None, shard: Shard | None = None,
    ) -> EvalResult:
        """The fixed evaluation protocol on a split (greedy, fixed prompt and extraction).
        `root` is the run's starting model: checkpoints must stand on it. `shard`: only that slice of the
        split's first `limit` tasks (`shard_of`); `merge_shards` puts the slices' results back together."""
        ...

    def hacking_probes(self, tasks: list[Task], limit: int = 8, seed: int = 0) -> list[RolloutRecord]:
        """Synthetic rollouts that game the reward and that the sealed verifier rejects; `seed` (secret to the
        sandbox) varies their text, so a harness cannot special-case one fixed probe."""
        ...


def shard_of(items: list[T], shard: Shard | None, align: int = 1) -> list[T]:
    """The i-th of n consecutive slices of `items`, cut only at multiples of `align`: a domain passes its
    evaluation batch size, so each shard decodes exactly the batches the whole evaluation would, and
    greedy answers (which padding within a batch can change) come out the same."""
    if shard is None:
        return items
    i, n = shard
    if not 0 <= i < n:
        raise ValueError(f"shard {i} of {n} does not exist")
    blocks = -(-len(items) // align)
    return items[blocks * i // n * align: blocks * (i + 1) // n * align]


def shards_with_work(size: int, shards: int, align: int = 1) -> int:
    """How many of `shards` slices of `size` items `shard_of` leaves non-empty: one per batch at most."""
    return min(shards, -(-size // max(1, align)))


def merge_shards(parts: list[EvalResult]) -> EvalResult:
    """One evaluation from its shards, given in shard order: the same results, in the same order, as the
    whole evaluation, and the score (mean and CI) computed from them as the domain does; `wall_time` is
    the shards' sum (the compute they took, not the wall time they took side by side)."""
    if not parts:
        raise ValueError("no shards to merge")
    extra = {k for p in parts for k, v in p.model_dump(exclude=set(EvalResult.model_fields)).items() if v}
    if extra:
        raise ValueError(f"{parts[0].domain}: {sorted(extra)} cannot be put together from shards; "
                         f"evaluate without eval_shards")
    parts = [p for p in parts if p.results] or parts[:1]  # a shard past the end of a short split is empty
    results = [r for p in parts for r in p.results]
    reused = {p.reused_from for p in parts}
    return parts[0].model_copy(update={"results": results, "score": bootstrap_ci([r.score for r in results]),
                                       "wall_time": sum(p.wall_time for p in parts),
                                       "reused_from": reused.pop() if len(reused) == 1 else None})


def empty_shard(domain: str, split: Split, policy: Path) -> EvalResult:
    """The evaluation of a shard with no tasks (more shards than batches): nothing loaded, nothing run."""
    return EvalResult(domain=domain, split=split, policy=str(policy), score=Interval(mean=0.0, low=0.0, high=0.0, n=0),
                      results=[], wall_time=0.0)


def evaluate_showing_progress(domain: Domain, policy: Path, split: Split, on_progress: Callable[[int], None] | None,
                              **kwargs: Any) -> EvalResult:
    """`domain.evaluate`, telling `on_progress` how many tasks each batch answered, where the domain can
    (a plugin domain written before progress was shown still evaluates, without it)."""
    if on_progress is not None and "on_progress" in inspect.signature(domain.evaluate).parameters:
        kwargs["on_progress"] = on_progress
    return domain.evaluate(policy, split, **kwargs)
