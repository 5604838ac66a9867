"""`bwrap` backend: one bubblewrap sandbox per session, limited by a per-session cgroup.

The sandbox is `bwrap --unshare-all --die-with-parent`: no network, a read-only view of
the system and of the Python runtime, the workdir and scratch dir writable, a private
/tmp, nothing else of the host. It is created once per session with
`sandboxes.sandbox_init` as its PID 1, which starts each command (one posix_spawn, so
a run costs about what a bare process costs) and kills whatever a run leaves behind.
Memory, pids and CPU are limited by cgroups (v1 or v2, detected at run time); where no
cgroup is writable, only memory is limited, per process, with RLIMIT_AS (RLIMIT_DATA for a
session with GPUs, `sandboxes.gpu.memory_rlimit`). The disk quota
(`sandboxes.disk_quota`) covers the workdir, the writable mounts and the scratch dir.
"""

from __future__ import annotations

import concurrent.futures
import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sandboxes.base import (
    ClosingSession,
    Limits,
    Mount,
    OutputBuffer,
    RunResult,
    SandboxError,
    captured_result,
    clean_env,
    held_memory,
)
from sandboxes.bwrap_args import CgroupJoin, sandbox_args
from sandboxes.cgroups import CgroupUnavailable, SessionCgroup, create_session_cgroup, pid_alive
from sandboxes.channel import INIT_SCRIPT, MessageReader, init_command, send_message
from sandboxes.disk_quota import TMPFS, DiskQuota, fsize_limit, tmpfs_bytes
from sandboxes.gpu import memory_rlimit
from sandboxes.identity import sandbox_identity
from sandboxes.mounts import session_mounts
from sandboxes.seccomp import filter_fd

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`)"
SESSION_DIR_PREFIX = "meta-agent-bwrap-"
START_TIMEOUT_S = 60.0
GRACE_S = 10.0
"""How long a killed run may take to report back before the whole sandbox is torn down."""
# Signs that a process hit RLIMIT_AS or RLIMIT_DATA (the memory limit without cgroups): it fails, not killed.
RLIMIT_OOM_SIGNS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")

# --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that spawned bwrap
# exits. Spawning from this one long-lived thread ties sessions to the process instead.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="bwrap-spawn")


def _sweep_stale_session_dirs() -> None:
    """Delete the session dirs (scratch, /etc copy) of owners that died without closing them."""
    for path in Path(tempfile.gettempdir()).glob(f"{SESSION_DIR_PREFIX}*-*"):
        owner = path.name[len(SESSION_DIR_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not pid_alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


class _Sandbox:
    """One running bwrap process tree and the channel to its PID 1."""

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.proc = proc
        self.sock = sock
        self.reader = MessageReader()
        self.pending: list[dict[str, Any]] = []

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The next message from PID 1; None on timeout; SandboxError if the sandbox is gone."""
        deadline = time.monotonic() + timeout
        while not self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                return None
            if not data:
                raise SandboxError("the bwrap sandbox exited")
            self.pending += self.reader.feed(data)
        return self.pending.pop(0)

    def stop(self) -> None:
        self.sock.close()  # PID 1 sees EOF and exits, which ends the whole pid namespace
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class BwrapSession(ClosingSession):
    """One workdir under bubblewrap; runs are serialised so per-run accounting stays exact."""

    def __init__(
        self,
        bwrap: str,
        workdir: Path,
        mounts: Sequence[Mount],
        limits: Limits,
        network: bool,
        use_cgroups: bool,
    ) -> None:
        self.workdir = workdir.resolve()
        self.limits = limits
        self._lock = threading.Lock()
        self._closed = False
        self._sandbox: _Sandbox | None = None
        _sweep_stale_session_dirs()
        self._dir = Path(tempfile.mkdtemp(prefix=f"{SESSION_DIR_PREFIX}{os.getpid()}-")).resolve()
        self.scratch = self._dir / "scratch"
        self.cgroup: SessionCgroup | None = None
        self.limit_mode = "rlimits (cgroups not requested)"
        self.identity = sandbox_identity()
        try:
            self.scratch.mkdir()
            if any(m.target is not None for m in mounts):
                raise SandboxError("bwrap binds every mount at its own path; a mount with a target needs docker")
            binds = [*session_mounts(self.workdir, self.scratch, mounts, self.identity), Mount(INIT_SCRIPT)]
            self._argv = [bwrap, *sandbox_args(binds, network, self.identity, limits.gpus,
                                               tmpfs_bytes=tmpfs_bytes(limits))]
            self.quota = DiskQuota([b.source for b in binds if not b.read_only and not b.hidden], limits)
            if use_cgroups:
                self._use_cgroup(limits)
            self._sandbox = self._start()
        except BaseException:
            self.close()
            raise

    def _use_cgroup(self, limits: Limits) -> None:
        try:
            self.cgroup = create_session_cgroup(limits)
            self.limit_mode = f"cgroup {self.cgroup.version}"
        except CgroupUnavailable as err:
            self.limit_mode = f"rlimits ({err})"
            print(
                f"WARNING: bwrap sandbox without cgroups: {err}. Only the memory limit is enforced "
                f"(per process, {'RLIMIT_DATA' if limits.gpus else 'RLIMIT_AS'}); the pids and CPU limits "
                "are not.",
                file=sys.stderr,
            )

    def _rlimits(self) -> None:
        """In the forked child, before bwrap: inherited by every process of the sandbox."""
        size = fsize_limit(self.limits)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        if self.cgroup is None:
            memory = self.limits.memory_mb * 1024 * 1024
            resource.setrlimit(memory_rlimit(self.limits.gpus), (memory, memory))

    def _start(self) -> _Sandbox:
        """Create the sandbox and wait until its PID 1 says it is ready."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = theirs.fileno()
        log_path = self._dir / "sandbox.log"
        seccomp = filter_fd()
        filter_args = ["--seccomp", str(seccomp)] if seccomp is not None else []
        drop = self.identity if self.identity.switches else None
        try:
            with CgroupJoin(self.cgroup) as join, open(log_path, "wb") as log:
                argv = [*self._argv, *join.bwrap_args, *filter_args, "--chdir", "/", "--",
                        *init_command(sys.executable, fd, fd, drop)]
                proc = _SPAWNER.submit(
                    subprocess.Popen,
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd="/",
                    env=clean_env(self.scratch),
                    pass_fds=(fd, *join.child_fds, *([seccomp] if seccomp is not None else [])),
                    start_new_session=True,
                    preexec_fn=self._rlimits,
                ).result()
                theirs.close()
                if seccomp is not None:
                    os.close(seccomp)
                    seccomp = None
                try:
                    join(proc.pid)
                except OSError as err:
                    proc.kill()
                    proc.wait()
                    raise SandboxError(f"cannot put the bwrap sandbox into its session cgroup: {err}") from err
        except BaseException:
            ours.close()
            theirs.close()
            if seccomp is not None:
                os.close(seccomp)
            raise
        sandbox = _Sandbox(proc, ours)
        try:
            ready = sandbox.next_message(START_TIMEOUT_S)
        except SandboxError:
            ready = None
        if ready is None or ready.get("event") != "ready":
            sandbox.stop()
            detail = log_path.read_text(errors="replace").strip()[-2000:]
            raise SandboxError(
                f"bubblewrap could not start a sandbox (exit {proc.returncode}): {detail}\n"
                "bwrap needs user namespaces: run as root or enable them "
                "(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)"
            )
        return sandbox

    def run(
        self,
        cmd: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> RunResult:
        if not cmd:
            raise SandboxError("empty command")
        with self._lock:
            if self._closed:
                raise SandboxError("bwrap session is closed; open a new one")
            if self._sandbox is None or self._sandbox.proc.poll() is not None:
                # The last run took the sandbox down (e.g. OOM killed its PID 1): start afresh.
                if self._sandbox is not None:
                    self._sandbox.stop()
                self._sandbox = None
                self._sandbox = self._start()
            oom_before = self.cgroup.oom_kills() if self.cgroup else 0
            self.quota.start()
            request = {
                "op": "spawn",
                "argv": list(cmd),
                "env": clean_env(self.scratch, env, self.limits),
                "cwd": str(cwd or self.workdir),
            }
            result = _Run(self._sandbox, self.limits.output_bytes, self.quota).execute(
                request, timeout if timeout is not None else self.limits.timeout_s
            )
            if result.sandbox_lost:
                self._sandbox.stop()
                self._sandbox = None
                if self.cgroup:
                    self.cgroup.kill_all()
            oom = self.cgroup is not None and self.cgroup.oom_kills() > oom_before
            outcome = result.to_result(oom, self.limits.memory_mb)
            if self.cgroup is None:
                failed = outcome.exit_code != 0 and not outcome.timed_out
                outcome = replace(outcome, oom_killed=failed and any(s in outcome.stderr for s in RLIMIT_OOM_SIGNS))
            over = self.quota.settle(result.full_tmpfs)  # nothing of the command runs any more
            return replace(outcome, disk_quota_exceeded=True, disk_quota_detail=over) if over else outcome

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._sandbox is not None:
                self._sandbox.stop()
                self._sandbox = None
            if self.cgroup is not None:
                self.cgroup.remove()
            shutil.rmtree(self._dir, ignore_errors=True)


class _Run:
    """One command: send it to PID 1, collect capped output, enforce the wall-time limit and the disk quota."""

    def __init__(self, sandbox: _Sandbox, output_bytes: int, quota: DiskQuota) -> None:
        self.sandbox = sandbox
        self.quota = quota
        self.out, self.err = OutputBuffer(output_bytes), OutputBuffer(output_bytes)
        self.exit_code: int | None = None
        self.timed_out = False
        self.stopping = False
        self.sandbox_lost = False
        self.full_tmpfs: list[str] = []
        self.held_at_kill_mb: int | None = None
        self.start = time.monotonic()

    def execute(self, request: dict[str, Any], timeout: float) -> _Run:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            send_message(self.sandbox.sock, request, (out_w, err_w))
        except OSError:
            self.sandbox_lost = True
        finally:
            os.close(out_w)
            os.close(err_w)
        try:
            if not self.sandbox_lost:
                self._collect(out_r, err_r, self.start + timeout)
        finally:
            os.close(out_r)
            os.close(err_r)
        if self.exit_code is None:
            self.exit_code = -9  # the sandbox went away under the command
        return self

    def _collect(self, out_r: int, err_r: int, deadline: float) -> None:
        sandbox = self.sandbox
        selector = selectors.DefaultSelector()
        selector.register(out_r, selectors.EVENT_READ, self.out)
        selector.register(err_r, selectors.EVENT_READ, self.err)
        sandbox.sock.setblocking(False)
        selector.register(sandbox.sock, selectors.EVENT_READ, None)
        open_pipes, reset_done = 2, False
        try:
            while open_pipes or not reset_done:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    if self.stopping or self.exit_code is not None:
                        self.sandbox_lost = True  # PID 1 did not report back: tear it all down
                        return
                    self.timed_out = True
                    deadline = self._stop()
                    continue
                watching = self.exit_code is None and not self.stopping
                if watching and self.quota.poll():
                    deadline = self._stop()
                    continue
                for key, _ in selector.select(self.quota.wait(wait) if watching else wait):
                    if key.data is not None:
                        chunk = os.read(key.fd, 1 << 16)
                        if chunk:
                            key.data.feed(chunk)
                        else:
                            selector.unregister(key.fd)
                            open_pipes -= 1
                        continue
                    data = sandbox.sock.recv(1 << 16)
                    if not data:
                        self.sandbox_lost = True
                        selector.unregister(sandbox.sock)
                        reset_done = True
                        continue
                    for message in sandbox.reader.feed(data):
                        if message["event"] == "exited":
                            self.exit_code = message["code"]
                            # Kill what the command left behind, so its pipes close and the next run is clean.
                            send_message(sandbox.sock, {"op": "reset", "tmpfs": list(TMPFS)})
                            if not self.stopping:
                                deadline = time.monotonic() + GRACE_S
                        elif message["event"] == "reset":
                            reset_done = True
                            self.full_tmpfs = list(message.get("full") or [])
                            self.held_at_kill_mb = held_memory(message.get("held_at_kill_mb"))
        except OSError:
            self.sandbox_lost = True
        finally:
            selector.close()
            sandbox.sock.setblocking(True)

    def _stop(self) -> float:
        """Have PID 1 kill the command (timed out, or over the disk quota); the new deadline for its report."""
        send_message(self.sandbox.sock, {"op": "kill"})
        self.stopping = True
        return time.monotonic() + GRACE_S

    def to_result(self, oom_killed: bool, memory_limit_mb: int) -> RunResult:
        code = self.exit_code if self.exit_code is not None else -9
        return captured_result(self.out, self.err, exit_code=code, started=self.start, timed_out=self.timed_out,
                               oom_killed=oom_killed, held_at_kill_mb=self.held_at_kill_mb,
                               memory_limit_mb=memory_limit_mb)


class BwrapSandbox:
    """Bubblewrap sessions; the default where no Docker engine answers."""

    name = "bwrap"
    isolated = True

    def __init__(self, *, use_cgroups: bool = True) -> None:
        found = shutil.which("bwrap")
        if found is None:
            raise SandboxError(f"sandbox backend 'bwrap' needs the bwrap binary: {INSTALL_HINT}")
        self.bwrap = found
        self.use_cgroups = use_cgroups

    def open(
        self,
        workdir: Path,
        *,
        mounts: Sequence[Mount] = (),
        limits: Limits = Limits(),
        network: bool = False,
    ) -> BwrapSession:
        return BwrapSession(self.bwrap, workdir, mounts, limits, network, self.use_cgroups)
