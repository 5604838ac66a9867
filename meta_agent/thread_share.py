"""A running job's share of the machine's cores, which the local executor may raise while the job runs.

The executor splits the cores between the jobs it starts side by side (`OMP_NUM_THREADS`, fixed when a
process starts). When a job ends and nothing waits to take its slot, the jobs still running would leave
its cores idle (`--parallel N` only: with `--parallel` unset, as in `make demo`, every job runs in the
driver on all cores). So each slot
has a share file, one integer, that the driver rewrites as jobs end; the worker reads it between
evaluation batches, and a harness may read it between training steps (the template does: the file is
mounted read-only into its sandbox and named by `META_AGENT_THREADS_FILE`).

A share never exceeds the machine's cores. A harness that ignores it, or sets more threads itself, gains
nothing it could not take before: the file is advice, not a limit (the sandbox's limits are memory, time
and disk, see sandboxes/base.py), and it is read-only there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

THREADS_FILE_ENV = "META_AGENT_THREADS_FILE"


class ThreadShares:
    """The driver's side: one share file per slot, in a directory of its own (bound read-only into a sandbox,
    so a rewrite, a rename within that directory, is seen there)."""

    def __init__(self, slots: int, cores: int | None = None) -> None:
        self.cores = max(1, cores or os.cpu_count() or 1)
        self.root = Path(tempfile.mkdtemp(prefix="meta-agent-threads-"))
        self.root.chmod(0o755)  # the sandbox's unprivileged uid reads it
        for i in range(slots):
            self.path(i).parent.mkdir(mode=0o755)
            self.set(i, 1)

    def path(self, slot: int) -> Path:
        return self.root / f"slot{slot}" / "threads"

    def set(self, slot: int, threads: int) -> None:
        path = self.path(slot)
        tmp = path.with_name(".threads.tmp")
        tmp.write_text(f"{threads}\n", encoding="ascii")
        tmp.chmod(0o644)
        os.replace(tmp, path)

    def spread(self, busy: list[int]) -> None:
        """Split the cores between the busy slots (the first ones get what does not divide evenly)."""
        if not busy:
            return
        base, extra = divmod(self.cores, len(busy))
        for rank, slot in enumerate(busy):
            self.set(slot, max(1, base + (1 if rank < extra else 0)))

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def share_file() -> Path | None:
    """This process's share file (a worker's, set by the executor), or None."""
    value = os.environ.get(THREADS_FILE_ENV)
    return Path(value) if value else None


def read_share(path: Path) -> int | None:
    """The share in `path`: a whole number of threads between 1 and this machine's cores, else None."""
    try:
        with path.open("rb") as f:
            threads = int(f.read(16).decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return threads if 1 <= threads <= (os.cpu_count() or 1) else None


def follow_share() -> None:
    """Set torch's threads to this process's current share, if it has one and it changed (call it from the
    thread that computes: OpenMP's thread count is that thread's own setting)."""
    path = share_file()
    if path is None:
        return
    threads = read_share(path)
    if threads is None:
        return
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
