"""Running meta-agent as the benchmark's arms do: in a fresh interpreter with the seed's own user data, and
never leaving a child behind when the benchmark is stopped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from meta_agent.errors import UserError
from meta_agent.fsutil import atomic_write_text
from meta_agent.sealed import SECRET_ENV

META_AGENT = (sys.executable, "-m", "meta_agent")
"""How the arms run meta-agent: in a fresh interpreter, like a user's shell would."""
_running: set[subprocess.Popen[str]] = set()
"""The children running now, from every lane (lanes.py stops them all when the driver is stopped)."""
_running_lock = threading.Lock()
_stopping = threading.Event()
"""Set by stop_children: the driver is being stopped, so no lane may start another child."""


def run_meta_agent(*args: str, data: Path, who: str, threads: int | None = None) -> float:
    """`meta-agent ARGS` in a subprocess with its own user data dir (skills, sealed splits); its wall seconds.
    A failure is a UserError with the command and the tail of its output.

    The sealed splits come from the secret in `data`, never from `META_AGENT_SEALED_SECRET`: a benchmark
    resumed in a shell where that variable is set (or set differently) would otherwise score its later
    arms on other selection and test tasks than its earlier ones, and every paired delta would be void.

    The child never outlives this call: whatever ends it early (Ctrl-C, or SIGTERM, which `stop_on_sigterm`
    turns into SystemExit) stops the child too, so a scheduler that signals only the benchmark's own pid
    leaves no orphaned run holding the harness repo's lock and the CPU. The run's journal makes it resumable.

    `threads`: the child's torch threads (OMP/MKL, which its sandboxes pass on), its share of the cores when
    arms run side by side; None leaves the child every core."""
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != SECRET_ENV} | {"META_AGENT_DATA": str(data)}
    if threads is not None:
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    with _running_lock:
        if _stopping.is_set():
            raise UserError(f"{who}: the benchmark is stopping; `meta-agent {args[0]}` was not started")
        proc = subprocess.Popen([*META_AGENT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        _running.add(proc)
    with proc:
        try:
            stdout, stderr = proc.communicate()
        except BaseException:
            stop_child(proc)
            raise
        finally:
            with _running_lock:
                _running.discard(proc)
    if proc.returncode != 0:
        raise UserError(f"{who}: `meta-agent {' '.join(args)}` failed (exit {proc.returncode}):\n"
                        f"{(stderr or stdout)[-3000:]}")
    return time.monotonic() - started


def stopping() -> bool:
    """Whether the driver is being stopped (no child will be started again)."""
    return _stopping.is_set()


def stop_child(proc: subprocess.Popen[str], grace_s: float = 30.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after `grace_s` (its sandboxes die with it)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop_children() -> None:
    """Stop every child `run_meta_agent` is waiting on, in any thread (each one's call then fails)."""
    with _running_lock:
        _stopping.set()
        procs = list(_running)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        stop_child(proc)


def stop_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C does (SystemExit 143), so `run_meta_agent` stops its child first."""
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def rollout_once(run: Path, done: Path, start: Callable[[], object]) -> None:
    """Call `start` (a `meta-agent rollout` into `run`) unless `done`, the file it writes last, is there: a run
    killed before writing it starts over in an empty `run`, so a benchmark resumes without mixing two runs."""
    if done.is_file():
        return
    if run.exists():
        shutil.rmtree(run)
    start()


def write_table(out: Path, rows: list[dict[str, Any]], text: str) -> None:
    """The benchmark's table as `table.md` (for people) and `table.json` (its rows), and on stdout."""
    atomic_write_text(out / "table.md", text + "\n")
    atomic_write_text(out / "table.json", json.dumps(rows, indent=2))
    print(text)
