"""The executor seam: the loop hands a generation's independent work (jobs.py: candidates' training
backtests, main's run and its noise reruns, the static arm, sealed-evaluation shards) to an
`Executor` and journals each result as it comes back; only the executor differs between a laptop
and a cluster.

- `local` (default): `--parallel 1` runs them one after another in the driver (the behaviour before
  the seam); `--parallel N` in N worker processes of this machine.
- `ray`: Ray tasks with resource requests, on a private local Ray instance or a cluster.

A job whose worker (process, node) dies is run again up to `retries` times, then comes back as its
failure with the reason (a candidate's failure for a backtest): never lost, never journaled twice
(the driver journals it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from pydantic import BaseModel

from meta_agent.execution.jobs import Job, JobEnv
from meta_agent.execution.settings import ExecutorSettings


class Executor(Protocol):
    name: str

    @property
    def in_driver(self) -> bool:
        """Jobs run in the driver's process (its progress display sees each training step)."""
        ...

    def run(self, jobs: Sequence[Job], env: JobEnv) -> Iterator[tuple[Job, BaseModel]]:
        """Each job's result, in the order they finish. `env` is the driver's (used by in-driver runs)."""
        ...

    def close(self) -> None: ...


def make_executor(settings: ExecutorSettings) -> Executor:
    """The executor the settings name, ready to run: Ray missing or a cluster that does not answer is
    a `UserError` here, before anything of the run starts."""
    if settings.kind == "ray":
        from meta_agent.execution.ray_executor import RayExecutor

        return RayExecutor(settings)
    from meta_agent.execution.local import LocalExecutor

    return LocalExecutor(settings)
