"""The local executor: in the driver (`--parallel 1`) or in N worker processes of this machine.

N slots, each one long-lived worker process that runs one job at a time: started with the executor
(at run set-up, so their imports overlap main's training), reused across generations, so a backtest
pays no interpreter start, import or domain load. A worker killed mid-backtest (OOM killer, a
user's `kill`) loses only its own job: the slot starts a new worker and the job runs again, up to
`retries` times; a process pool would break and take its siblings with it.

Each job gets an equal share of the machine's cores for torch (OMP/MKL threads, which the sandbox
passes on to `harness train`), so that side-by-side trainings do not fight over every core, and on
a GPU host slot i trains on GPU i mod n. When a job ends with nothing queued, the jobs still running
share its cores: their share files are rewritten (thread_share.py), which worker and harness follow.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess

from pydantic import BaseModel

from meta_agent.errors import failure_text
from meta_agent.execution.jobs import Job, JobEnv, job_from_json, preload
from meta_agent.execution.settings import ExecutorSettings
from meta_agent.thread_share import THREADS_FILE_ENV, ThreadShares
from sandboxes.gpu import gpu_nodes

READY = b"ready"


@dataclass
class _Slot:
    """One worker process and the job it is running (if any)."""

    index: int
    device: str | None
    proc: BaseProcess | None = None
    conn: Connection | None = None
    job: Job | None = None
    attempt: int = 0
    ready: bool = False
    """The worker has imported what a backtest needs (it says so once, before its first job)."""

    share: str | None = None
    """This slot's share file (meta_agent/thread_share.py)."""

    def start(self) -> None:
        ctx = mp.get_context("spawn")
        mine, theirs = ctx.Pipe(duplex=True)
        # daemon: a driver that stops on an error (before `close`) does not wait for its workers at exit
        self.proc = ctx.Process(target=_serve, args=(theirs, self.device, os.getpid(), self.share),
                                name=f"meta-agent-worker-{self.index}", daemon=True)
        self.proc.start()
        theirs.close()
        self.conn, self.ready = mine, False

    def message(self) -> bytes | None:
        """The worker's next message other than its `ready` (None: none waiting). Raises EOFError/OSError
        when the worker is gone."""
        assert self.conn is not None
        while self.conn.poll():
            data = self.conn.recv_bytes()
            if data != READY:
                return data
            self.ready = True
        return None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
        if self.conn is not None:
            self.conn.close()
        self.proc = self.conn = None


class LocalExecutor:
    name = "local"

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings
        width = settings.parallel or 1
        gpus = gpu_count()
        self.shares = ThreadShares(width) if width > 1 else None
        self.slots = [_Slot(i, str(i % gpus) if gpus else None, share=str(self.shares.path(i)) if self.shares else None)
                      for i in range(width)] if width > 1 else []
        for slot in self.slots:
            slot.start()

    @property
    def in_driver(self) -> bool:
        return not self.slots

    def warm(self, timeout: float = 300.0) -> None:
        """Wait until every worker has imported what a backtest needs (a run does not: its workers warm
        up while main trains; a benchmark does, to time backtests and not interpreter start-up)."""
        deadline = time.monotonic() + timeout
        for slot in self.slots:
            while not slot.ready and slot.alive() and time.monotonic() < deadline:
                with contextlib.suppress(EOFError, OSError):
                    if slot.message() is None:
                        time.sleep(0.05)

    def run(self, jobs: Sequence[Job], env: JobEnv) -> Iterator[tuple[Job, BaseModel]]:
        if not self.slots:
            for job in jobs:
                if not getattr(job, "tolerated", False):
                    yield job, job.execute(env)
                    continue
                try:
                    result = job.execute(env)
                except Exception as e:  # as a worker returns it (Job.isolated)
                    result = job.failed(failure_text(e))
                yield job, result
            return
        yield from self._in_workers(jobs)

    def _in_workers(self, jobs: Sequence[Job]) -> Iterator[tuple[Job, BaseModel]]:
        threads = max(1, (os.cpu_count() or 1) // min(len(self.slots), len(jobs)))
        queue = [(job, 1) for job in jobs]
        try:
            while queue or any(s.job for s in self.slots):
                for slot in self.slots:
                    if queue and slot.job is None:
                        if not slot.alive():
                            slot.stop()
                            slot.start()
                        job, attempt = queue.pop(0)
                        self._share(slot.index, threads)  # before the job: its worker reads the share as it starts
                        try:
                            assert slot.conn is not None
                            slot.conn.send_bytes(f"{attempt} {threads} {job.model_dump_json()}".encode())
                        except OSError:  # the idle worker died just now: a new one takes the job next round
                            slot.stop()
                            queue.insert(0, (job, attempt))
                            continue
                        slot.job, slot.attempt = job, attempt
                busy = [s for s in self.slots if s.job]
                wait([s.conn for s in busy if s.conn] + [s.proc.sentinel for s in busy if s.proc])
                finished: list[tuple[Job, BaseModel]] = []
                ended = False
                for slot in busy:
                    done = _collect(slot)
                    if done is None:
                        continue
                    job, result = done
                    ended = True
                    if result is not None:
                        finished.append((job, result))
                    elif slot.attempt <= self.settings.retries:
                        queue.insert(0, (job, slot.attempt + 1))
                    else:
                        code = slot.proc.exitcode if slot.proc else None
                        finished.append((job, job.lost(slot.attempt, f"worker process exited with code {code}")))
                if ended and not queue:  # nothing will take the freed slots: the jobs still running get their cores
                    self._spread()
                yield from finished
        finally:
            for slot in self.slots:
                if slot.job is not None:  # abandoned mid-job (the driver stops): that worker goes too
                    slot.stop()
                    slot.job = None

    def _share(self, slot: int, threads: int) -> None:
        if self.shares is not None:
            self.shares.set(slot, threads)

    def _spread(self) -> None:
        if self.shares is not None:
            self.shares.spread([s.index for s in self.slots if s.job is not None])

    def close(self) -> None:
        for slot in self.slots:
            if slot.alive() and slot.conn is not None and slot.proc is not None:
                with contextlib.suppress(OSError):
                    slot.conn.send_bytes(b"")  # the worker's signal to exit
                slot.proc.join(timeout=10)
            slot.stop()
        if self.shares is not None:
            self.shares.close()


def _collect(slot: _Slot) -> tuple[Job, BaseModel | None] | None:
    """The slot's finished job and its result (None: the worker died with it), or None while it runs."""
    job = slot.job
    assert job is not None and slot.conn is not None
    try:
        data = slot.message()
        if data is not None:
            slot.job = None
            return job, job.parse(data)
    except (EOFError, OSError, ValueError):
        pass  # the worker died: its end of the pipe closed with nothing (or half a message) in it
    if slot.alive():
        return None
    slot.job = None
    slot.stop()
    return job, None


def gpu_count() -> int:
    """GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else the host's device nodes."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    return len(gpu_nodes())


def _serve(conn: Connection, device: str | None, parent: int, share: str | None = None) -> None:
    """A worker process: runs the jobs it is sent, one at a time, until told to stop; gone when the
    driver is (a killed driver's resume reruns the job; an orphan must not keep writing into its
    directory meanwhile)."""
    if device is not None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = visible.split(",")[int(device)].strip() if visible else device
    if share is not None:
        os.environ[THREADS_FILE_ENV] = share
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    import torch

    preload()
    conn.send_bytes(READY)
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if not message:
            return
        attempt, threads, job_json = message.decode().split(" ", 2)
        for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[key] = threads
        torch.set_num_threads(int(threads))
        result = job_from_json(job_json).isolated(int(attempt))
        conn.send_bytes(result.model_dump_json().encode())


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
