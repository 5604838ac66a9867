"""Run a host subprocess with a wall-time limit and capped output capture (`process` backend).

One selector loop waits on both pipes and on a pidfd, so a run returns the moment
the process exits: `Popen.wait(timeout)` polls with sleeps and would add milliseconds
to every run.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sandboxes.base import OutputBuffer, RunResult, captured_result
from sandboxes.disk_quota import DiskQuota

DRAIN_GRACE_S = 5.0
"""After the process is gone, how long to wait for pipes held open by escaped descendants."""


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _drain(proc: subprocess.Popen[bytes], buffers: dict[int, OutputBuffer], deadline: float, quota: DiskQuota
           ) -> bool:
    """Collect output until the process has exited and both pipes are closed; True if it timed out.

    The group is killed at the deadline, or as soon as `quota` finds the session over its disk quota."""
    selector = selectors.DefaultSelector()
    for fd, buf in buffers.items():
        selector.register(fd, selectors.EVENT_READ, buf)
    pidfd = os.pidfd_open(proc.pid)
    selector.register(pidfd, selectors.EVENT_READ, None)
    open_pipes, exited, timed_out, killed = len(buffers), False, False, False
    try:
        while open_pipes or not exited:
            wait = deadline - time.monotonic()
            if wait <= 0:
                if exited or killed:
                    break  # pipes held by something outside the group: stop waiting for them
                timed_out = killed = True
                _kill_group(proc.pid)
                deadline = time.monotonic() + DRAIN_GRACE_S
                continue
            watching = not exited and not killed
            if watching and quota.poll():
                killed = True
                _kill_group(proc.pid)
                deadline = time.monotonic() + DRAIN_GRACE_S
                continue
            for key, _ in selector.select(quota.wait(wait) if watching else wait):
                if key.data is None:
                    selector.unregister(pidfd)
                    proc.wait()
                    exited = True
                    # Children may outlive the leader (daemonised helpers); the group goes too.
                    _kill_group(proc.pid)
                    if not killed:
                        deadline = time.monotonic() + DRAIN_GRACE_S
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    key.data.feed(chunk)
                else:
                    selector.unregister(key.fd)
                    open_pipes -= 1
    finally:
        selector.close()
        os.close(pidfd)
    return timed_out


def run_capped(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    output_bytes: int,
    quota: DiskQuota,
    preexec: Callable[[], None] | None = None,
) -> RunResult:
    """Run argv in its own process group; kill the whole group on timeout or over the disk quota; cap
    captured output. `quota.settle` is the caller's, once the group is gone.

    The output is drained to the end even past the cap, so a chatty command never
    blocks on a full pipe; only the first `output_bytes` of each stream are kept.
    """
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=preexec,
        )
    except (FileNotFoundError, PermissionError) as unrunnable:
        # Same outcome as in the isolating backends: a failed run, not an exception.
        code = 127 if isinstance(unrunnable, FileNotFoundError) else 126
        message = f"cannot run {argv[0]!r} in {cwd}: {unrunnable.strerror}\n"
        return RunResult(exit_code=code, stdout="", stderr=message, wall_time=time.monotonic() - start)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = OutputBuffer(output_bytes), OutputBuffer(output_bytes)
    try:
        timed_out = _drain(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err}, start + timeout, quota)
    finally:
        if proc.returncode is None:  # _drain raised: do not leave the group running
            _kill_group(proc.pid)
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return captured_result(out, err, exit_code=proc.returncode, started=start, timed_out=timed_out, oom_killed=False)
