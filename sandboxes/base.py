"""The Sandbox protocol: every command that runs evolved harness code goes through it.

A backend opens a *session* on a workdir (a checkout of one candidate). Inside a
session the workdir and a private scratch dir are writable, explicitly listed mounts
are visible (read-only unless asked otherwise), the host Python runtime is visible
read-only, and nothing else of the host is. The network is off unless requested.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

OUTPUT_CUT_MARKER = "\n[... output cut by sandbox: {dropped} bytes dropped ...]\n"


class SandboxError(RuntimeError):
    """A sandbox could not be created or used (not: the command inside it failed)."""


@dataclass(frozen=True)
class Mount:
    """A host path made visible inside the sandbox at the same absolute path (or hidden there)."""

    source: Path
    read_only: bool = True
    hidden: bool = False
    """Shown as an empty directory (or empty file) instead: for sealed data inside a bound tree,
    such as a dataset package in the venv. Must come after the mount that holds it."""
    target: Path | None = None
    """Bind it at this path instead of its own (docker only: a task image's fixed paths, such as Harbor's
    /tests); None: at its host path."""


@dataclass(frozen=True)
class Limits:
    """Per-session resource limits; each backend enforces all of them."""

    memory_mb: int = 8192
    """Address-space / cgroup memory cap for everything in the session."""
    cpus: float = 2.0
    """CPU quota in cores."""
    pids: int = 512
    """Maximum number of processes/threads alive at once (fork bombs stop here)."""
    timeout_s: float = 3600.0
    """Default wall-time limit of one `run` call; `run(timeout=...)` overrides it."""
    output_bytes: int = 1_000_000
    """Cap on captured stdout and on stderr (each); the rest is dropped with a marker."""
    gpus: bool = False
    """Pass the host's NVIDIA GPUs in (`sandboxes/gpu.py`); no effect on a host without them."""
    disk_mb: int = 8192
    """Disk quota of the session: what its commands may add to its host directories (workdir, writable
    mounts, scratch) together; also the size of each single file and of each in-memory /tmp (see
    `sandboxes/disk_quota.py`). Over it the command is killed and what it wrote is deleted."""


AT_MEMORY_LIMIT = 0.9
"""The share of its memory limit a timed-out command held for its timeout to be reported as out of memory."""


@dataclass(frozen=True)
class RunResult:
    """What happened to one command run inside a session."""

    exit_code: int
    stdout: str
    stderr: str
    wall_time: float
    timed_out: bool = False
    oom_killed: bool = False
    output_truncated: bool = False
    disk_quota_exceeded: bool = False
    """The command wrote more than `Limits.disk_mb`: it was stopped and what it wrote was deleted."""
    disk_quota_detail: str = ""
    """Which directory, how much, and the quota (set with `disk_quota_exceeded`)."""
    held_at_kill_mb: int | None = None
    """The private memory the command's processes held when the sandbox killed it (timed out, or over the disk
    quota), as its PID 1 measured it; None when it was not killed or nothing could be measured."""
    memory_limit_mb: int | None = None
    """The session's memory limit, for reading `held_at_kill_mb`."""

    @property
    def stalled_out_of_memory(self) -> bool:
        """Timed out while holding nearly all of its memory limit: a process at its cgroup's limit is slowed by
        the kernel reclaiming for it, and on a busy machine may reach its timeout before the OOM killer."""
        held, limit = self.held_at_kill_mb, self.memory_limit_mb
        return self.timed_out and held is not None and limit is not None and held >= AT_MEMORY_LIMIT * limit

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed and not self.disk_quota_exceeded

    def describe_failure(self, tail_lines: int = 30) -> str:
        """A one-paragraph reason a user can act on, ending with the tail of stderr."""
        if self.disk_quota_exceeded:
            head = (f"went over its disk quota and was stopped: {self.disk_quota_detail}; write less, or give the "
                    "session a larger quota (Limits.disk_mb)")
        elif self.stalled_out_of_memory:
            head = (f"ran out of memory and timed out after {self.wall_time:.1f}s: it held {self.held_at_kill_mb} MB "
                    f"of the sandbox's {self.memory_limit_mb} MB limit when it was killed; give it more memory "
                    "(the sandbox's memory_mb) or have it use less")
        elif self.timed_out:
            held = f" (holding {self.held_at_kill_mb} MB of memory)" if self.held_at_kill_mb is not None else ""
            head = f"timed out after {self.wall_time:.1f}s and was killed{held}"
        elif self.oom_killed:
            head = "ran out of memory (killed by the sandbox memory limit)"
        else:
            head = f"exited with code {self.exit_code}"
        tail = "\n".join((self.stderr or self.stdout).strip().splitlines()[-tail_lines:])
        return f"{head}; last output:\n{tail}" if tail else head


@runtime_checkable
class Session(Protocol):
    """An open sandbox on one workdir. Use as a context manager so it is always closed.

    Runs in one session are serialised; nothing a run starts survives it (background
    processes are killed when the command ends). Files persist in the workdir (shared with
    the host) and in `scratch` for the life of the session.
    """

    workdir: Path
    """Absolute host path, bound read-write at the same path inside the sandbox."""
    scratch: Path
    """Private writable dir as seen *inside* the sandbox (HOME and TMPDIR). It may not exist on
    the host (docker: a tmpfs), so results meant for the host belong in the workdir or a mount."""
    limits: Limits
    """What the session enforces; its memory cap is also told to every command (`MEMORY_ENV`)."""

    def run(
        self,
        cmd: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> RunResult:
        """Run `cmd` (argv list) inside the sandbox; `cwd` defaults to the workdir."""
        ...

    def close(self) -> None:
        """Stop everything the session started; idempotent."""
        ...

    def __enter__(self) -> Session: ...

    def __exit__(self, *exc: object) -> None: ...


class ClosingSession:
    """Context-manager plumbing the backends' sessions share: leaving the `with` block closes the session."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class Sandbox(Protocol):
    """A backend: makes sessions."""

    name: str
    isolated: bool
    """False only for the `process` backend, which must be asked for by name."""

    def open(
        self,
        workdir: Path,
        *,
        mounts: Sequence[Mount] = (),
        limits: Limits = Limits(),
        network: bool = False,
    ) -> Session: ...


def host_python_mounts() -> list[Mount]:
    """Read-only mounts that make the current interpreter and its venv usable inside a sandbox."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return [Mount(p) for p in sorted(paths)]


MEMORY_ENV = "META_AGENT_MEMORY_MB"
"""Every sandboxed command is told its session's memory cap (MB) in this variable: a cgroup's limit is not
visible from inside bubblewrap, and a job that sizes a cache to its memory (the sampler's packed weights,
harness/decode_linear.py) must not size it to the host's."""


def clean_env(scratch: Path, extra: Mapping[str, str] | None = None, limits: Limits | None = None) -> dict[str, str]:
    """The environment every sandboxed command starts from: nothing inherited from the host; with `limits`,
    the session's memory cap in `MEMORY_ENV` (it overrides a caller's value: it is the cap enforced)."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(scratch / "hf"),
        "TOKENIZERS_PARALLELISM": "false",
        "MPLCONFIGDIR": str(scratch / "mpl"),
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }
    # The caller's share of the machine: its torch threads, and which GPUs are its (Ray and the local
    # executor's workers set CUDA_VISIBLE_DEVICES; without it every sandbox would train on GPU 0).
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES"):
        if key in os.environ:
            env[key] = os.environ[key]
    if extra:
        env.update(extra)
    if limits is not None:
        env[MEMORY_ENV] = str(limits.memory_mb)
    return env


@dataclass
class OutputBuffer:
    """Accumulates a stream up to a cap while counting (not storing) what is dropped."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> tuple[str, bool]:
        body = self.data.decode("utf-8", errors="replace")
        if self.dropped:
            return body + OUTPUT_CUT_MARKER.format(dropped=self.dropped), True
        return body, False


def held_memory(reported: Any) -> int | None:
    """The `held_at_kill_mb` a sandbox's PID 1 reported, if it is a plausible number of MB (the command shares
    that process's sandbox, so the figure only ever goes into a message)."""
    if isinstance(reported, int) and not isinstance(reported, bool) and 0 <= reported < 1 << 40:
        return reported
    return None


def captured_result(
    out: OutputBuffer, err: OutputBuffer, *, exit_code: int, started: float, timed_out: bool, oom_killed: bool,
    held_at_kill_mb: int | None = None, memory_limit_mb: int | None = None,
) -> RunResult:
    """A RunResult from the two capped streams of a finished command (`started`: time.monotonic())."""
    stdout, cut_out = out.text()
    stderr, cut_err = err.text()
    return RunResult(exit_code=exit_code, stdout=stdout, stderr=stderr, wall_time=time.monotonic() - started,
                     timed_out=timed_out, oom_killed=oom_killed, output_truncated=cut_out or cut_err,
                     held_at_kill_mb=held_at_kill_mb, memory_limit_mb=memory_limit_mb)
