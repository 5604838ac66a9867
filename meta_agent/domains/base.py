"""The Domain protocol and the typed results of a sealed evaluation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from meta_agent.contract import RolloutRecord, Task
from meta_agent.stats import Interval

Split = Literal["train", "selection", "test"]


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
        on_progress: Callable[[int], None] | None = None,
    ) -> EvalResult:
        """The fixed evaluation protocol on a split (greedy, fixed prompt and extraction).
        `root` is the run's starting model: checkpoints must stand on it."""
        ...

    def hacking_probes(self, tasks: list[Task], limit: int = 8, seed: int = 0) -> list[RolloutRecord]:
        """Synthetic rollouts that game the reward and that the sealed verifier rejects; `seed` (secret to the
        sandbox) varies their text, so a harness cannot special-case one fixed probe."""
        ...
