"""`process` backend: a plain subprocess with rlimits. NO isolation: only when asked for by name."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from sandboxes.base import Limits, Mount, OutputBuffer, RunResult, clean_env


def _pump(stream: IO[bytes], buf: OutputBuffer) -> None:
    for chunk in iter(lambda: stream.read(65536), b""):
        buf.feed(chunk)


def run_capped(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    output_bytes: int,
    preexec: object = None,
) -> RunResult:
    """Run argv in its own process group; kill the whole group on timeout; cap captured output."""
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec,  # type: ignore[arg-type]
    )
    out, err = OutputBuffer(output_bytes), OutputBuffer(output_bytes)
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
    ]
    for t in pumps:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Children may outlive the leader (daemonised helpers); the group goes either way.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    for t in pumps:
        t.join(timeout=5)
    stdout, cut_out = out.text()
    stderr, cut_err = err.text()
    return RunResult(
        exit_code=proc.returncode,
        stdout=stdout,
        stderr=stderr,
        wall_time=time.monotonic() - start,
        timed_out=timed_out,
        oom_killed=False,
        output_truncated=cut_out or cut_err,
    )


class ProcessSession:
    """A workdir plus a scratch dir; commands run as ordinary host processes."""

    def __init__(self, workdir: Path, limits: Limits) -> None:
        self.workdir = workdir.resolve()
        self.scratch = Path(tempfile.mkdtemp(prefix="meta-agent-scratch-"))
        self.limits = limits

    def _rlimits(self) -> None:
        mem = self.limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))

    def run(
        self,
        cmd: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> RunResult:
        return run_capped(
            cmd,
            cwd=cwd or self.workdir,
            env=clean_env(self.scratch, env),
            timeout=timeout if timeout is not None else self.limits.timeout_s,
            output_bytes=self.limits.output_bytes,
            preexec=self._rlimits,
        )

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> ProcessSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ProcessSandbox:
    """No isolation at all: the command sees the whole host. Refused by `auto`."""

    name = "process"
    isolated = False

    def open(
        self,
        workdir: Path,
        *,
        mounts: Sequence[Mount] = (),
        limits: Limits = Limits(),
        network: bool = False,
    ) -> ProcessSession:
        print(
            "WARNING: sandbox backend 'process' gives NO isolation: evolved harness code runs "
            "with your user's full access to files and network.",
            file=sys.stderr,
        )
        return ProcessSession(workdir, limits)
