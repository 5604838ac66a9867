"""Worker checkouts for testing mutants, each with its own sandbox session, and a way to run one alone.

Mutants are tested `workers` at a time, each on a borrowed checkout. A mutant whose tests
time out under that load is re-checked alone (`borrow_alone`): every other worker first
finishes its run and none starts until the re-check is done, so a slow-but-finite mutant
is not mistaken for an endless loop because the machine was busy.
"""

from __future__ import annotations

import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from meta_agent.swe.env import env_mounts
from meta_agent.swe.project import ProjectRepo
from sandboxes import Limits, Sandbox, Session

BUILD_LIMITS = Limits(memory_mb=4096, cpus=1.0, pids=256)


class _Gate:
    """A readers-writer lock that prefers the writer: shared holders are normal runs, the exclusive one runs alone."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class Slots:
    """Worker checkouts of the base tree; a mutant borrows one at a time."""

    def __init__(self, repo: ProjectRepo, base: str, sandbox: Sandbox, count: int, env: Path,
                 stack: ExitStack) -> None:
        self._free: queue.Queue[tuple[Path, Session]] = queue.Queue()
        self._gate = _Gate()
        self.tmp = Path(tempfile.mkdtemp(prefix="meta-agent-swe-build-")).resolve()
        stack.callback(shutil.rmtree, self.tmp, True)
        for i in range(count):
            root = repo.export(base, self.tmp / f"slot{i}")
            session = stack.enter_context(sandbox.open(root, mounts=env_mounts(env), limits=BUILD_LIMITS))
            self._free.put((root, session))

    @contextmanager
    def _take(self) -> Iterator[tuple[Path, Session]]:
        slot = self._free.get()
        try:
            yield slot
        finally:
            self._free.put(slot)

    @contextmanager
    def borrow(self) -> Iterator[tuple[Path, Session]]:
        """A checkout to run on, beside the other workers."""
        with self._gate.shared(), self._take() as slot:
            yield slot

    @contextmanager
    def borrow_alone(self) -> Iterator[tuple[Path, Session]]:
        """A checkout to run on while no other worker runs anything."""
        with self._gate.exclusive(), self._take() as slot:
            yield slot
