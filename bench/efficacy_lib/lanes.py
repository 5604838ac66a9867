"""A seed's arms in lanes run side by side: each lane is a list of arms run in order, each lane a thread whose
`meta-agent` children get an equal share of the cores among the lanes still running (`lane_threads`): once one
lane has finished, the other's next child gets every core again.

Why: on 2 cores a SmolLM2 training or evaluation does not use both cores well (much of a step is one-core
Python), so two arms side by side finish sooner than one after the other: 0.67-0.71 of the wall at identical
answers for two of this benchmark's arms (bench/efficacy_lanes.py, bench/results/efficacy-lanes). Each arm is
still a whole `meta-agent` command with its own run dir, result and record, so a stopped benchmark resumes arm
by arm as before.

A lane that fails does not stop the other: its arms finish and are saved, then the failure is raised. A stop
of the driver (Ctrl-C, SIGTERM) stops every lane's child at once and starts no new one.

The arms that follow the two searches go into one `ArmQueue` that every lane takes from once its search is done,
so neither lane idles while the other has arms waiting: the evolve arm is followed by five arms (four when
nothing merged) and the random search by two, so fixed lanes left one lane alone for the last 10-20 minutes of a
seed (bench/results/efficacy-remeasure)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

from bench.efficacy_lib.commands import stop_children, stopping
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
    raise_all([e for f in futures if (e := f.exception()) is not None])


class ArmQueue:
    """Arms any lane may run, in the order added (`first`: ahead of those waiting), each once no arm it names
    in `after` is still waiting or running (an arm that reuses another's result checks for that result
    itself). `close()` says no more will be added; `work()` runs arms until none is left, then raises the
    failures of the arms it ran."""

    def __init__(self) -> None:
        self._waiting: list[tuple[str, frozenset[str], Callable[[], object]]] = []
        self._running: set[str] = set()
        self._closed = False
        self._changed = threading.Condition()

    def add(self, name: str, arm: Callable[[], object], after: frozenset[str] = frozenset(),
            first: bool = False) -> None:
        with self._changed:
            self._waiting.insert(0 if first else len(self._waiting), (name, after, arm))
            self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _next(self) -> tuple[str, Callable[[], object]] | None:
        with self._changed:
            while not stopping():
                unfinished = self._running | {name for name, _, _ in self._waiting}
                for i, (name, after, arm) in enumerate(self._waiting):
                    if not after & unfinished:
                        del self._waiting[i]
                        self._running.add(name)
                        return name, arm
                if self._closed and not self._waiting:
                    return None
                self._changed.wait(timeout=5.0)  # an arm ended or was added (or the driver is stopping)
            return None

    def _ended(self, name: str) -> None:
        with self._changed:
            self._running.discard(name)
            self._changed.notify_all()

    def work(self) -> None:
        errors: list[Exception] = []
        while (picked := self._next()) is not None:
            name, arm = picked
            try:
                arm()
            except Exception as e:  # this arm fails; the others still run (a stop is a BaseException: raised)
                errors.append(e)
            finally:
                self._ended(name)
        raise_all(errors)


def raise_all(errors: Sequence[BaseException]) -> None:
    """Raise the one failure, or every failure's reason in one UserError when all are user errors."""
    if len(errors) == 1 or (errors and not all(isinstance(e, UserError) for e in errors)):
        raise errors[0]
    if errors:
        raise UserError("\n".join(str(e) for e in errors))


__all__ = ["ArmQueue", "lane_threads", "raise_all", "run_lanes", "threads_per_lane"]
