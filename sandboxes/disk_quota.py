"""A session's disk quota: how much its commands may add to the host directories they can write.

The machines this runs on have no filesystem quota to hand out (no project quotas, and cgroups v1 has
no disk controller), so the quota is kept from outside, in three parts:
- every process of a session runs under RLIMIT_FSIZE just above the quota: no single file outgrows it;
- the session's in-memory mounts (/tmp, /dev/shm; docker's scratch) are tmpfs capped at the quota,
  and PID 1 reports one that a run filled up, emptied of what that run wrote (`sandbox_init`);
- the loop that waits for a command measures the session's writable host directories (allocated
  blocks: a sparse file counts what it uses) every `MIN_INTERVAL_S` or so, and once more after the
  command ended. Over the quota the command is killed, and everything it created or changed in those
  directories is deleted (by ctime, from the clock tick it began in): a refused output never stays on disk.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandboxes.base import Limits
from sandboxes.sandbox_init import remove_changed_since

MIB = 1024 * 1024
MIN_INTERVAL_S = 0.1
"""Time between two measurements while a command runs; what it writes in that time is the most it can
overshoot the quota by (and is deleted with the rest)."""
WALK_SHARE = 0.05
"""Measuring may take at most this share of the time: a big tree is measured less often."""
MAX_NEW_ENTRIES = 100_000
"""More new files and directories than this count as over the quota: each costs an inode and a stat."""
FSIZE_SLACK = MIB
"""RLIMIT_FSIZE is the quota plus this, so a file stopped by the limit is always over the quota."""
TMPFS = ("/tmp", "/dev/shm")
"""In-memory mounts every backend gives a session; PID 1 checks them after each run."""
CLOCK_REALTIME_COARSE = 5
"""The clock the kernel stamps file changes (ctime) with, one tick (a few ms) at a time; `time` has no name for it."""


def fsize_limit(limits: Limits) -> int:
    """RLIMIT_FSIZE for every process of a session with these limits."""
    return limits.disk_mb * MIB + FSIZE_SLACK


def tmpfs_bytes(limits: Limits) -> int:
    """Size of each in-memory mount of a session: at most the disk quota, and no more than its memory
    (never 0, which a tmpfs takes for no limit at all)."""
    return max(1, min(limits.disk_mb, limits.memory_mb)) * MIB


@dataclass
class DiskUsage:
    """Bytes allocated under each root, and why a measurement counts as over the quota regardless."""

    by_root: dict[Path, int] = field(default_factory=dict)
    entries: int = 0
    problem: str = ""
    """Set when the walk could not finish: an unreadable directory, or too many entries."""
    recent: dict[tuple[int, int], int] = field(default_factory=dict)
    """(st_dev, st_ino) -> ctime of the entries changed in the clock tick the walk began in (if asked)."""

    @property
    def total(self) -> int:
        return sum(self.by_root.values())


def measure(roots: Sequence[Path], max_entries: int | None = None, recent_since: int | None = None) -> DiskUsage:
    """Allocated bytes under each root (a hard-linked file once); stops at `max_entries` entries; with
    `recent_since`, also which entries changed at or after it.

    Directories are opened without following links and must still be the directory that was listed,
    so code that swaps one for a link while this runs cannot make it walk a host directory.
    """
    usage = DiskUsage()
    seen: set[tuple[int, int]] = set()
    for root in roots:
        usage.by_root[root] = 0
        try:
            info = os.lstat(root)
        except FileNotFoundError:
            continue
        usage.by_root[root] = info.st_blocks * 512
        stack = [(str(root), info.st_dev, info.st_ino)] if stat.S_ISDIR(info.st_mode) else []
        while stack:
            path, dev, ino = stack.pop()
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except PermissionError:
                usage.problem = (f"{path}: its mode keeps the trusted side from counting what is in it; "
                                 "sandboxed code may not hide what it writes")
                return usage
            except OSError:
                continue  # gone, or replaced by a link, since it was listed: the next walk sees what is there
            try:
                opened = os.fstat(fd)
                if (opened.st_dev, opened.st_ino) != (dev, ino):
                    continue
                with os.scandir(fd) as entries:
                    for entry in entries:
                        usage.entries += 1
                        if max_entries is not None and usage.entries > max_entries:
                            usage.problem = (f"more than {max_entries} files and directories in "
                                             f"{', '.join(map(str, roots))}")
                            return usage
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        if recent_since is not None and st.st_ctime_ns >= recent_since:
                            usage.recent[(st.st_dev, st.st_ino)] = st.st_ctime_ns
                        is_dir = stat.S_ISDIR(st.st_mode)
                        if st.st_nlink > 1 and not is_dir:
                            if (st.st_dev, st.st_ino) in seen:
                                continue
                            seen.add((st.st_dev, st.st_ino))
                        usage.by_root[root] += st.st_blocks * 512
                        if is_dir:
                            stack.append((os.path.join(path, entry.name), st.st_dev, st.st_ino))
            finally:
                os.close(fd)
    return usage


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """The paths, resolved, without those inside another one (they would be counted twice)."""
    resolved = sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def _tick() -> int:
    return time.clock_gettime_ns(CLOCK_REALTIME_COARSE)


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"


class DiskQuota:
    """Keeps one session within `Limits.disk_mb` over its writable host directories.

    The quota counts what the directories grew by since the session opened, whoever wrote it.
    A backend calls `start` before each command, `wait`/`poll` from the loop that waits for it
    (killing the command when `poll` says so), and `settle` once everything the command started is gone.
    """

    def __init__(self, roots: Sequence[Path], limits: Limits) -> None:
        self.roots = _outermost(roots)
        self.limits = limits
        self.limit = limits.disk_mb * MIB
        self.interval = MIN_INTERVAL_S
        self.next_check = 0.0
        self.max_entries: int | None = None
        self.since_ns = _tick()
        self.baseline = self._measure(recent_since=self.since_ns)
        self.max_entries = self.baseline.entries + MAX_NEW_ENTRIES
        self.settled = self.baseline.recent
        """What changed in the tick the last command was settled in: a command begun in that same tick
        would otherwise take those entries for its own."""
        self.tripped: DiskUsage | None = None

    def start(self) -> None:
        """A command is about to run: what changes in the session's directories from this clock tick on is its
        (except what `settled` holds, unchanged)."""
        self.since_ns = _tick()
        self.tripped = None
        self.next_check = time.monotonic() + self.interval

    def wait(self, longest: float) -> float:
        """How long the waiting loop may block (at most `longest`) before the next measurement is due."""
        return max(0.0, min(longest, self.next_check - time.monotonic()))

    def poll(self) -> bool:
        """True once, when a due measurement finds the session over its quota: stop the command now."""
        if self.tripped is not None or time.monotonic() < self.next_check:
            return False
        usage = self._measure()
        if self._over(usage):
            self.tripped = usage
        return self.tripped is not None

    def settle(self, full_tmpfs: Sequence[str] = ()) -> str:
        """After the command and all it started are gone: '' within the quota; otherwise what went over,
        once everything the command wrote in the session's directories has been deleted."""
        usage = self._measure(recent_since=_tick())
        worst = self.tripped if self.tripped is not None and self.tripped.total > usage.total else usage
        over = self.tripped is not None or self._over(usage)
        parts = []
        if over:
            for root in self.roots:
                remove_changed_since(str(root), self.since_ns, self.settled)
            usage = self._measure(recent_since=_tick())
            parts.append(self._describe(worst, usage))
        self.settled = usage.recent
        cap = tmpfs_bytes(self.limits) // MIB
        parts += [f"{path} (in memory, capped at {cap} MiB) filled up" for path in full_tmpfs]
        return "; ".join(parts) + "; what the command wrote there was deleted" if parts else ""

    def _measure(self, recent_since: int | None = None) -> DiskUsage:
        begun = time.monotonic()
        usage = measure(self.roots, self.max_entries, recent_since)
        self.interval = max(MIN_INTERVAL_S, (time.monotonic() - begun) / WALK_SHARE)
        self.next_check = time.monotonic() + self.interval
        return usage

    def _over(self, usage: DiskUsage) -> bool:
        return bool(usage.problem) or usage.total - self.baseline.total > self.limit

    def _describe(self, worst: DiskUsage, cleared: DiskUsage) -> str:
        """Where the command wrote most (what was deleted from each root), and how far the session went."""
        if worst.problem:
            return worst.problem
        removed = {root: worst.by_root.get(root, 0) - cleared.by_root.get(root, 0) for root in self.roots}
        top = max(removed, key=lambda root: removed[root])
        together = worst.total - self.baseline.total
        return (f"{top} grew by {_mib(removed[top])} in this command (the session's writable directories by "
                f"{_mib(together)} since it opened), over the {self.limits.disk_mb} MiB disk quota")
