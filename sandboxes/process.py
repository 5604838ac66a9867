"""`process` backend: a plain subprocess with rlimits and the disk quota over its workdir and scratch.
NO isolation: only when asked for by name."""

from __future__ import annotations

import resource
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from sandboxes.base import ClosingSession, Limits, Mount, RunResult, SandboxError, clean_env
from sandboxes.capture import run_capped
from sandboxes.disk_quota import DiskQuota, fsize_limit
from sandboxes.gpu import memory_rlimit


class ProcessSession(ClosingSession):
    """A workdir plus a scratch dir; commands run as ordinary host processes."""

    def __init__(self, workdir: Path, limits: Limits) -> None:
        self.workdir = workdir.resolve()
        self.scratch = Path(tempfile.mkdtemp(prefix="meta-agent-scratch-"))
        self.limits = limits
        self.quota = DiskQuota([self.workdir, self.scratch], limits)
        self._closed = False

    def _rlimits(self) -> None:
        mem = self.limits.memory_mb * 1024 * 1024
        resource.setrlimit(memory_rlimit(self.limits.gpus), (mem, mem))
        size = fsize_limit(self.limits)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    def run(
        self,
        cmd: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> RunResult:
        if self._closed:
            raise SandboxError("process session is closed; open a new one")
        self.quota.start()
        result = run_capped(
            cmd,
            cwd=cwd or self.workdir,
            env=clean_env(self.scratch, env, self.limits),
            timeout=timeout if timeout is not None else self.limits.timeout_s,
            output_bytes=self.limits.output_bytes,
            quota=self.quota,
            preexec=self._rlimits,
        )
        over = self.quota.settle()
        return replace(result, disk_quota_exceeded=True, disk_quota_detail=over) if over else result

    def close(self) -> None:
        self._closed = True
        shutil.rmtree(self.scratch, ignore_errors=True)


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
