"""The Ray executor: each job (a training backtest, main's run, a noise rerun, a static-arm generation,
an evaluation shard) is a Ray task with a resource request (CPUs, GPUs, memory).

The task runs on whichever node Ray picks, in a sandbox session of that node, and reads and writes
the run directory and the sealed data through paths, so on a multi-node cluster both must sit on
storage every node mounts at the same path (docs/scale.md). Verdicts, merges and the journal stay
on the driver. A task whose worker or node dies is retried by Ray (`max_retries`), then reported
as that candidate's failure.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from meta_agent.errors import UserError
from meta_agent.execution.jobs import Job, JobEnv, job_from_json
from meta_agent.execution.settings import ExecutorSettings

FORWARDED_PREFIXES = ("META_AGENT_", "HF_", "TRANSFORMERS_")
"""Environment the tasks need to find the same data dir, sealed secret and offline model cache as the driver."""


class RayUnavailable(UserError):
    """Ray is not installed, or the cluster does not answer."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--executor ray needs Ray on the driver and on every node: "
                             "pip install 'meta-agent[ray]' (or use --executor local)") from None
    return ray


def _task(job_json: str) -> str:
    """Runs on a Ray worker: the job as JSON in, its result as JSON out (nothing pickled but text)."""
    return job_from_json(job_json).isolated(None).model_dump_json()


def _answers(address: str, timeout: float = 10.0) -> None:
    """A TCP connection to HOST:PORT (or ray://HOST:PORT) within `timeout`, else OSError."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{address!r} is not auto, HOST:PORT or ray://HOST:PORT")
    with socket.create_connection((host, int(port)), timeout=timeout):
        pass


class RayExecutor:
    name = "ray"
    in_driver = False

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings
        ray = self.ray = _ray()
        env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES)}
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "runtime_env": {"env_vars": env}}
        if settings.ray_address is None:
            kwargs["num_cpus"] = os.cpu_count() or 1
        where = settings.ray_address or "a local Ray instance"
        try:
            if settings.ray_address not in (None, "auto"):
                _answers(settings.ray_address)  # ray.init itself keeps retrying a dead address for minutes
            self._started = not ray.is_initialized()
            if self._started:
                ray.init(address=settings.ray_address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError, OSError) as e:
            raise RayUnavailable(f"cannot reach Ray at {where}: {e}. Start the cluster (`ray start --head` on "
                                 f"its head node) or check --ray-address; nothing of the run has started") from e
        options: dict[str, Any] = {"num_cpus": settings.cpus_per_task, "num_gpus": settings.gpus_per_task,
                                   "max_retries": settings.retries, "retry_exceptions": False}
        if settings.memory_mb_per_task:
            options["memory"] = settings.memory_mb_per_task * 2**20
        self.remote = ray.remote(_task).options(**options)

    def run(self, jobs: Sequence[Job], env: JobEnv) -> Iterator[tuple[Job, BaseModel]]:
        ray = self.ray
        queue = list(jobs)
        flying: dict[Any, Job] = {}
        try:
            while queue or flying:
                while queue and len(flying) < (self.settings.parallel or len(jobs)):
                    job = queue.pop(0)
                    flying[self.remote.remote(job.model_dump_json())] = job
                ready, _ = ray.wait(list(flying), num_returns=1)
                job = flying.pop(ready[0])
                try:
                    yield job, job.parse(ray.get(ready[0]))
                except ray.exceptions.RayError as e:  # worker or node lost on every attempt
                    yield job, job.lost(self.settings.retries + 1, f"{type(e).__name__}: {str(e)[:500]}")
        finally:
            for ref in flying:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()
