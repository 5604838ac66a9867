"""The local executor: in the driver (`--parallel 1`) or in N spawned worker processes.

One process per job rather than a pool: a worker killed mid-backtest (OOM killer, a user's `kill`)
loses only its own job, which is run again; a pool would break and take its siblings with it.
Each worker gets an equal share of the machine's cores for torch (OMP/MKL threads, which the
sandbox passes on to `harness train`), so that N trainings do not fight over every core.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess

from meta_agent.execution.base import lost
from meta_agent.execution.jobs import JobEnv, TrainJob, run_train_job
from meta_agent.execution.settings import ExecutorSettings
from meta_agent.verdicts import StageResult


class LocalExecutor:
    name = "local"

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings

    def run(self, jobs: list[TrainJob], env: JobEnv) -> Iterator[tuple[TrainJob, StageResult]]:
        if (self.settings.parallel or 1) == 1:
            for job in jobs:
                yield job, run_train_job(job, env)
            return
        yield from self._processes(jobs)

    def _processes(self, jobs: list[TrainJob]) -> Iterator[tuple[TrainJob, StageResult]]:
        width = self.settings.parallel or 1
        threads = max(1, (os.cpu_count() or 1) // min(width, len(jobs)))
        queue = [(job, 1) for job in jobs]
        running: dict[BaseProcess, tuple[TrainJob, int, Connection]] = {}
        results: dict[str, StageResult | None] = {}
        ctx = mp.get_context("spawn")
        try:
            while queue or running:
                while queue and len(running) < width:
                    job, attempt = queue.pop(0)
                    receive, send = ctx.Pipe(duplex=False)
                    proc: BaseProcess = ctx.Process(target=_worker, args=(job, attempt, send, threads, os.getpid()),
                                                    name=f"meta-agent-train-{job.stage_id}")
                    proc.start()
                    send.close()
                    running[proc] = (job, attempt, receive)
                ready = wait([p.sentinel for p in running] + [conn for _, _, conn in running.values()])
                for proc, (job, attempt, receive) in list(running.items()):
                    if receive in ready and job.key not in results:  # read before exit: a full pipe blocks it
                        results[job.key] = _received(receive)
                    if proc.is_alive():
                        continue
                    del running[proc]
                    receive.close()
                    proc.join()
                    result = results.pop(job.key, None)
                    if result is not None:
                        yield job, result
                    elif attempt <= self.settings.retries:
                        queue.insert(0, (job, attempt + 1))
                    else:
                        yield job, lost(job, attempt, f"worker process exited with code {proc.exitcode}")
        finally:
            for proc in running:
                proc.kill()
                proc.join()

    def close(self) -> None:
        return None


def _received(conn: Connection) -> StageResult | None:
    """The worker's result, or None when it died before sending one (the pipe is then closed: EOF)."""
    try:
        return StageResult.model_validate_json(conn.recv_bytes())
    except (EOFError, OSError, ValueError):
        return None


def _worker(job: TrainJob, attempt: int, send: Connection, threads: int, parent: int) -> None:
    """A worker process: its share of the cores, gone when the driver is (a killed driver's resume
    reruns the job; an orphan must not keep writing into its directory meanwhile)."""
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[key] = str(threads)
    import torch

    torch.set_num_threads(threads)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    result = run_train_job(job, attempt=attempt)
    send.send_bytes(result.model_dump_json().encode())
    send.close()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
