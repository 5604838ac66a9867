"""A seed's arms in lanes run side by side: each lane is a list of arms run in order, each lane a thread whose
`meta-agent` children get an equal share of the cores among the lanes still running (`lane_threads`): once one
lane has finished, the other's next child gets every core again.

Why: on 2 cores a SmolLM2 training or evaluation does not use both cores well (much of a step is one-core
Python), so two arms side by side finish sooner than one after the other: 0.67-0.71 of the wall at identical
answers for two of this benchmark's arms (bench/efficacy_lanes.py, bench/results/efficacy-lanes). Each arm is
still a whole `meta-agent` command with its own run dir, result and record, so a stopped benchmark resumes arm
by arm as before.

A lane that fails does not stop the other: its arms finish and are saved, then the failure is raised. A stop
of the driver (Ctrl-C, SIGTERM) stops every lane's child at once and starts no new one."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

from bench.efficacy_lib.commands import stop_children
from meta_agent.errors import UserError


def threads_per_lane(lanes: int) -> int | None:
    """Each lane's torch threads: its share of this machine's cores; None (every core) for one lane."""
    return None if lanes <= 1 else max(1, (os.cpu_count() or 1) // lanes)


_running = 0
"""How many lanes of `run_lanes` are running now (0 outside it, or when lanes run one after the other)."""
_running_lock = threading.Lock()


def lane_threads() -> int | None:
    """The torch threads for a child started now: its lane's share of the cores among the lanes still running;
    None (every core) when only one is."""
    with _running_lock:
        return threads_per_lane(_running)


def _counted(lane: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        global _running
        try:
            lane()
        finally:
            with _running_lock:
                _running -= 1
    return run


def run_lanes(lanes: Sequence[Callable[[], None]], side_by_side: bool) -> None:
    """Run each lane (in order when not `side_by_side`); raise the failure of any, after all have ended."""
    global _running
    if not side_by_side or len(lanes) <= 1:
        for lane in lanes:
            lane()
        return
    with _running_lock:
        _running = len(lanes)
    with ThreadPoolExecutor(len(lanes), thread_name_prefix="lane") as pool:
        futures = [pool.submit(_counted(lane)) for lane in lanes]
        try:
            wait(futures)
        except BaseException:  # the driver was stopped: no lane's child may outlive it
            stop_children()
            wait(futures)
            raise
    errors = [e for f in futures if (e := f.exception()) is not None]
    if len(errors) == 1 or (errors and not all(isinstance(e, UserError) for e in errors)):
        raise errors[0]
    if errors:
        raise UserError("\n".join(str(e) for e in errors))


__all__ = ["lane_threads", "run_lanes", "threads_per_lane"]
