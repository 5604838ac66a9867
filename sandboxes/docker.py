"""`docker` backend: one long-lived container per session, one `docker exec` per command.

Commands go through exec_create/exec_start (what `exec_run` does) with the output streamed,
so the output cap and the wall-time limit apply while the command runs.
The container has no network, a read-only root, tmpfs /tmp and scratch, memory/CPU/pids
limits, a disk quota over the bound writable dirs (`sandboxes.disk_quota`), no capabilities
and no-new-privileges. The host interpreter and venv, the workdir and the session's mounts
are bound at their host paths. Its PID 1 is
`sandboxes.sandbox_init`, attached to this process through the engine: it kills what a
run leaves behind (also on timeout: the engine has no "kill this exec"), reports OOM kills,
and exits when the attach stream closes, so a dead owner leaves no container behind.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException
from docker.types import DeviceRequest, Ulimit

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
from sandboxes.channel import INIT_SCRIPT, MessageReader, init_command
from sandboxes.disk_quota import TMPFS, DiskQuota, fsize_limit, tmpfs_bytes
from sandboxes.docker_stream import STDERR, STDOUT, FrameDemux, already_buffered, raw_socket
from sandboxes.engine import docker_client
from sandboxes.identity import sandbox_identity
from sandboxes.image import image_exists, image_tag
from sandboxes.mounts import session_mounts
from sandboxes.sandbox_init import encode

SCRATCH = Path("/scratch")
IN_MEMORY = (*TMPFS, str(SCRATCH))
"""The container's tmpfs mounts, each capped (`tmpfs_bytes`); PID 1 reports one a run filled."""
LABEL = "meta-agent.sandbox"
START_TIMEOUT_S = 60.0
GRACE_S = 10.0
EXIT_POLL_MIN_S, EXIT_POLL_MAX_S = 0.05, 1.0


class _Container:
    """The session's container and the attach stream to its PID 1."""

    def __init__(self, client: docker.DockerClient, container_id: str, attach: Any) -> None:
        self.client = client
        self.id = container_id
        self.attach = attach
        self.sock = raw_socket(attach)
        self.demux = FrameDemux()
        self.reader = MessageReader()
        self.pending: list[dict[str, Any]] = []
        self.log = bytearray()
        self.pending += self._messages(already_buffered(attach))

    def _messages(self, data: bytes) -> list[dict[str, Any]]:
        out = b""
        for stream, payload in self.demux.feed(data):
            if stream == STDOUT:
                out += payload
            else:
                self.log += payload[-4096:]
        return self.reader.feed(out) if out else []

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(encode(message))

    def next_message(self, deadline: float) -> dict[str, Any] | None:
        """The next message from PID 1; None on timeout; SandboxError if it is gone."""
        while not self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], remaining)
            if not ready:
                continue
            data = self.sock.recv(1 << 16)
            if not data:
                raise SandboxError(f"the sandbox container exited: {self.log.decode(errors='replace')[-1000:]}")
            self.pending += self._messages(data)
        return self.pending.pop(0)

    def wait_for(self, event: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = self.next_message(deadline)
            if message is None:
                raise SandboxError(f"the sandbox container did not answer ({event!r}) within {timeout:.0f}s")
            if message.get("event") == event:
                return message

    def remove(self) -> None:
        self.sock.close()  # PID 1 sees EOF and exits, and auto_remove deletes the container...
        with contextlib.suppress(DockerException):  # ...so this only makes it immediate
            self.client.api.remove_container(self.id, force=True)


class DockerSession(ClosingSession):
    """One workdir in one container; runs are serialised (they share the container's limits)."""

    def __init__(
        self,
        client: docker.DockerClient,
        image: str,
        workdir: Path,
        mounts: Sequence[Mount],
        limits: Limits,
        network: bool,
        workdir_at: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.image = image
        self.workdir = workdir.resolve()
        self.inside = workdir_at or self.workdir
        """Where the workdir is inside the container: its host path unless the sandbox binds it elsewhere."""
        self.env = dict(env or {})
        """Variables every run starts with (over the clean environment, under the run's own)."""
        self.scratch = SCRATCH
        self.limits = limits
        self.network = network
        self.identity = sandbox_identity()
        self._binds = [*session_mounts(self.workdir, None, mounts, self.identity), Mount(INIT_SCRIPT)]
        self.quota = DiskQuota([m.source for m in self._binds if not m.read_only and not m.hidden], limits)
        self._lock = threading.Lock()
        self._closed = False
        self._oom_seen = 0
        self._container: _Container | None = self._start()

    def _start(self) -> _Container:
        api = self.client.api
        limits = self.limits
        tmpfs_options = f"rw,exec,nosuid,nodev,mode=1777,size={tmpfs_bytes(limits)}"
        visible = [m for m in self._binds if not m.hidden]
        binds = {str(m.source): {"bind": str(self.inside if m.source == self.workdir else (m.target or m.source)),
                                 "mode": "ro" if m.read_only else "rw"} for m in visible}
        tmpfs = {"/tmp": tmpfs_options, str(SCRATCH): tmpfs_options}
        for m in self._binds:
            if m.hidden and m.source.is_dir():
                tmpfs[str(m.source)] = "ro,nosuid,nodev,noexec,size=4k"
        hidden_files = [f"/dev/null:{m.source}:ro" for m in self._binds if m.hidden and not m.source.is_dir()]
        host_config = api.create_host_config(
            binds=[f"{source}:{spec['bind']}:{spec['mode']}" for source, spec in binds.items()] + hidden_files,
            tmpfs=tmpfs,
            read_only=True,
            network_mode=None if self.network else "none",
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",
            nano_cpus=int(limits.cpus * 1e9),
            pids_limit=limits.pids,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            ulimits=[Ulimit(name="fsize", soft=fsize_limit(limits), hard=fsize_limit(limits))],
            auto_remove=True,
            # every GPU, as `docker run --gpus all` (the NVIDIA container toolkit on the engine's host)
            device_requests=[DeviceRequest(count=-1, capabilities=[["gpu"]])] if limits.gpus else None,
        )
        name = f"meta-agent-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        failure = f"cannot start a sandbox container from {self.image}"
        if self.network:
            failure += " (with network=True it needs the engine's default network)"
        try:
            container_id = api.create_container(
                self.image,
                command=init_command(sys.executable, 0, 1),
                name=name,
                hostname="sandbox",
                user=f"{self.identity.uid}:{self.identity.gid}",
                working_dir=str(self.inside),
                environment=clean_env(self.scratch),
                labels={LABEL: "1", f"{LABEL}.owner-pid": str(os.getpid()), f"{LABEL}.workdir": str(self.workdir)},
                stdin_open=True,  # with detach=False this sets StdinOnce: our exit closes PID 1's stdin
                detach=False,
                host_config=host_config,
            )["Id"]
        except DockerException as err:
            raise SandboxError(f"{failure}: {err}") from err
        try:
            attach = api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            container = _Container(self.client, container_id, attach)
            api.start(container_id)
            ready = container.wait_for("ready", START_TIMEOUT_S)
        except (DockerException, SandboxError, OSError) as err:
            with contextlib.suppress(DockerException):
                api.remove_container(container_id, force=True)
            raise SandboxError(f"{failure}: {err}") from err
        self._oom_seen = ready.get("oom_kills") or 0
        return container

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
                raise SandboxError("docker session is closed; open a new one")
            if self._container is None:
                # The last run took the container down (e.g. OOM killed its PID 1): start afresh.
                self._container = self._start()
            container = self._container
            self.quota.start()
            run = _ExecRun(container, self.limits.output_bytes, self.quota)
            try:
                limit = timeout if timeout is not None else self.limits.timeout_s
                env_in = clean_env(self.scratch, {**self.env, **(env or {})}, self.limits)
                run.execute(list(cmd), env_in, cwd or self.inside, limit)
                reset = container.wait_for("reset", GRACE_S)
            except (SandboxError, OSError, DockerException):
                run.container_lost, reset = True, {}
            oom_kills = reset.get("oom_kills") or self._oom_seen
            oom = oom_kills > self._oom_seen
            self._oom_seen = oom_kills
            if run.container_lost:
                container.remove()
                self._container = None
                oom = oom or (run.exit_code == 137 and not run.timed_out and not run.stopping)
            outcome = run.to_result(oom, held_memory(reset.get("held_at_kill_mb")), self.limits.memory_mb)
            over = self.quota.settle(reset.get("full") or [])  # nothing of the command runs any more
            return replace(outcome, disk_quota_exceeded=True, disk_quota_detail=over) if over else outcome

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._container is not None:
                self._container.remove()
                self._container = None
            self.client.close()


class _ExecRun:
    """One `docker exec`: capped output; the wall-time limit and the disk quota enforced by PID 1 killing everything."""

    def __init__(self, container: _Container, output_bytes: int, quota: DiskQuota) -> None:
        self.container = container
        self.quota = quota
        self.out, self.err = OutputBuffer(output_bytes), OutputBuffer(output_bytes)
        self.exit_code: int | None = None
        self.timed_out = False
        self.stopping = False
        self.container_lost = False
        self.reset_sent = False
        self.exec_id = ""
        self.start = time.monotonic()

    def execute(self, cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> None:
        api = self.container.client.api
        self.exec_id = api.exec_create(self.container.id, cmd, environment=env, workdir=str(cwd))["Id"]
        stream = api.exec_start(self.exec_id, socket=True)
        try:
            self._collect(stream, self.start + timeout)
        finally:
            stream.close()
        self._reset()  # PID 1 works on this while we ask the engine for the exit code
        self.exit_code = self._exit_code()

    def _reset(self) -> None:
        """Ask PID 1 to kill what the command left behind (answered in DockerSession.run)."""
        if not self.reset_sent:
            self.reset_sent = True
            self.container.send({"op": "reset", "tmpfs": list(IN_MEMORY)})

    def _collect(self, stream: Any, deadline: float) -> None:
        sock = raw_socket(stream)
        demux = FrameDemux()
        self._feed(demux.feed(already_buffered(stream)))
        poll = EXIT_POLL_MIN_S
        next_exit_check = time.monotonic() + poll
        while True:
            now = time.monotonic()
            wait = deadline - now
            if wait <= 0:
                if self.stopping:
                    raise SandboxError("the sandbox did not stop a command it was told to kill")
                self.timed_out = True
                deadline = self._stop()
                continue
            if not self.stopping and self.quota.poll():
                deadline = self._stop()
                continue
            quiet = min(wait, max(0.0, next_exit_check - now))
            ready, _, _ = select.select([sock], [], [], quiet if self.stopping else self.quota.wait(quiet))
            if not ready:
                if time.monotonic() >= next_exit_check:
                    # Quiet stream: background processes may hold it open after the command exited,
                    # and the engine would only close it seconds later. Check, and reset if so.
                    if not self.reset_sent and not self._running():
                        self._reset()
                    poll = min(poll * 2, EXIT_POLL_MAX_S)
                    next_exit_check = time.monotonic() + poll
                continue
            data = sock.recv(1 << 16)
            if not data:
                return
            self._feed(demux.feed(data))

    def _stop(self) -> float:
        """Have PID 1 kill everything (timed out, or over the disk quota); the new deadline for the stream to end."""
        self.container.send({"op": "kill"})
        self.stopping = True
        return time.monotonic() + GRACE_S

    def _running(self) -> bool:
        return bool(self.container.client.api.exec_inspect(self.exec_id).get("Running"))

    def _feed(self, frames: list[tuple[int, bytes]]) -> None:
        for stream, payload in frames:
            (self.err if stream == STDERR else self.out).feed(payload)

    def _exit_code(self) -> int:
        deadline = time.monotonic() + GRACE_S
        while True:
            info = self.container.client.api.exec_inspect(self.exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            if time.monotonic() > deadline:
                return -1
            time.sleep(0.002)

    def to_result(self, oom_killed: bool, held_at_kill_mb: int | None, memory_limit_mb: int) -> RunResult:
        code = self.exit_code if self.exit_code is not None else -9
        return captured_result(self.out, self.err, exit_code=code, started=self.start, timed_out=self.timed_out,
                               oom_killed=oom_killed, held_at_kill_mb=held_at_kill_mb, memory_limit_mb=memory_limit_mb)


class DockerSandbox:
    """Docker sessions; `auto` picks this backend when an engine answers.

    `image` replaces the harness image (a task's own environment, `meta_agent/swe/task_images.py`); `workdir_at`
    binds each session's workdir at that path instead of its host path (SWE-bench images keep their repository at
    /testbed, and their test scripts `cd` there); `env` is set for every run (such an image's own PATH). The
    isolation is the same whatever the image.
    """

    name = "docker"
    isolated = True

    def __init__(self, *, image: str | None = None, workdir_at: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        if workdir_at is not None and not workdir_at.is_absolute():
            raise SandboxError(f"workdir_at must be an absolute path inside the container, not {workdir_at}")
        self.image = image
        self.workdir_at = workdir_at
        self.env = dict(env or {})

    def open(
        self,
        workdir: Path,
        *,
        mounts: Sequence[Mount] = (),
        limits: Limits = Limits(),
        network: bool = False,
    ) -> DockerSession:
        client = docker_client()
        image = self.image or image_tag()
        if not image_exists(client, image):
            client.close()
            raise SandboxError(
                f"the sandbox image {image} is not built on this engine; run `meta-agent sandbox build-image`"
            )
        try:
            return DockerSession(client, image, workdir, mounts, limits, network, self.workdir_at, self.env)
        except BaseException:
            client.close()
            raise
