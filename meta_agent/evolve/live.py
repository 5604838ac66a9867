"""RUN/live.json: what the process running a run is doing now, for `meta-agent status` and the live page.

Written by the CLI's reporter on every phase and training step (atomically, a few hundred bytes). It is
a hint, not a record: the journal decides what is done; this file says who is working on the rest, and
on what. A run is alive while the process named here exists on this host and is a meta-agent process.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from meta_agent.fsutil import atomic_write_text

LIVE_FILE = "live.json"


class LiveState(BaseModel):
    pid: int
    host: str
    command: str
    """evolve | resume"""
    started: float
    updated: float
    phase: str = ""
    phase_since: float = 0.0
    detail: str = ""
    """The running phase's progress: a training step, tasks answered."""
    steps_done: int = 0
    steps_total: int = 0
    eta_seconds: float | None = None
    """The run's time to go when it was written (evolve/eta.py); generation_eta_seconds: its generation's."""
    generation_eta_seconds: float | None = None
    ended: str | None = None
    """Why the process stopped when it stopped cleanly (finished, interrupted, out of budget)."""


class LiveWriter:
    """Keeps RUN/live.json current for one process."""

    def __init__(self, run_dir: Path, command: str, steps_total: int) -> None:
        self.path = run_dir / LIVE_FILE
        now = time.time()
        self.state = LiveState(pid=os.getpid(), host=socket.gethostname(), command=command, started=now,
                               updated=now, steps_total=steps_total)
        self.lock = threading.Lock()

    def update(self, **fields: object) -> None:
        if "phase" in fields:
            fields.setdefault("phase_since", time.time())
            fields.setdefault("detail", "")
        with self.lock:  # training progress arrives on a watcher thread
            self.state = self.state.model_copy(update={**fields, "updated": time.time()})
            if self.path.parent.is_dir():
                with contextlib.suppress(OSError):  # a full disk costs the status hint, never the run
                    atomic_write_text(self.path, self.state.model_dump_json(indent=2))


def read_live(run_dir: Path) -> LiveState | None:
    try:
        return LiveState.model_validate_json((run_dir / LIVE_FILE).read_bytes()[:65536])
    except (OSError, ValidationError):
        return None


def _process_start(pid: int) -> float | None:
    """When process `pid` started (Unix time), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, counted after the command name's parenthesis
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def is_alive(state: LiveState) -> bool:
    """The process that wrote `state` still runs: on this host, and started before it wrote the file (a
    process that took over its number later is another one)."""
    if state.ended is not None or state.host != socket.gethostname():
        return False
    started = _process_start(state.pid)
    return started is not None and started <= state.started + 2
