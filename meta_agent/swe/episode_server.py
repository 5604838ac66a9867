"""Training episodes of image instances, run for the harness in the instances' own images.

The harness trains inside its sandbox, which has no Docker engine and must not get one. For a train task whose
instance runs in its own image, the harness asks this server instead, over a Unix socket whose folder is
mounted read-only into its sandbox (`META_AGENT_EPISODES` names the socket). One request per connection, one
JSON line each way:

- `{"op": "open", "task_id": ID}` starts an episode: a container of the instance's image (the same isolation
  as every sandbox: no network, read-only root, the unprivileged uid, limits) on a fresh copy of the
  instance's repository bound at /testbed, whose history stops at the base (`image_tree.py`);
- `{"op": "run", "episode": E, "command": CMD, "timeout": S}` runs one shell command there; exit code and
  output (stdout and stderr together, cut to `max_chars`);
- `{"op": "diff", "episode": E}` is what the episode changed, as a diff;
- `{"op": "test", "task_id": ID, "diff": D}` grades a diff as the sealed evaluator does (the reward's tests);
- `{"op": "close", "episode": E}` ends the episode.

Only train instances the server was given can be opened; requests are validated and bounded, every answer is
bounded, and a request that fails gets `{"ok": false, "error": ...}` rather than taking the server down.
Episodes run concurrently (a thread per connection), at most `max_open` at once.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import socketserver
import tempfile
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance
from sandboxes import Limits, Mount, SandboxError, Session

SOCKET_ENV = "META_AGENT_EPISODES"
EPISODE_LIMITS = Limits(memory_mb=2048, cpus=1.0, pids=256, timeout_s=120.0, output_bytes=1_000_000,
                        disk_mb=2048)
MAX_REQUEST_BYTES = 4_000_000
MAX_DIFF_BYTES = 2_000_000
MAX_CONNECTIONS = 64
"""Requests served at once (a thread each); the next connection is answered `busy` and closed."""
IDLE_TIMEOUT_S = 60.0
"""How long the server waits for a request line (or to hand over an answer) before dropping the connection."""


class _Req(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpenReq(_Req):
    op: Literal["open"]
    task_id: str = Field(max_length=500)


class RunReq(_Req):
    op: Literal["run"]
    episode: str = Field(max_length=64)
    command: str = Field(max_length=20_000)
    timeout: float = Field(10.0, gt=0, le=600)
    max_chars: int = Field(10_000, ge=1, le=200_000)


class DiffReq(_Req):
    op: Literal["diff"]
    episode: str = Field(max_length=64)


class TestReq(_Req):
    __test__ = False
    op: Literal["test"]
    task_id: str = Field(max_length=500)
    diff: str = Field(max_length=MAX_DIFF_BYTES)


class CloseReq(_Req):
    op: Literal["close"]
    episode: str = Field(max_length=64)


Request = TypeAdapter(Annotated[OpenReq | RunReq | DiffReq | TestReq | CloseReq, Field(discriminator="op")])


class RequestRefused(Exception):
    """A request the server will not carry out; its text goes back to the harness."""


@dataclass
class _Episode:
    workdir: Path
    session: Session


class _Server(socketserver.ThreadingUnixStreamServer):
    """At most MAX_CONNECTIONS requests at once: the harness is untrusted, and a thread per connection is ours."""

    daemon_threads = True

    def __init__(self, path: str, handler: type[socketserver.BaseRequestHandler]) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(path, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(json.dumps({"ok": False, "error": f"busy: {MAX_CONNECTIONS} requests in flight"})
                                .encode() + b"\n")
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} characters cut ...]"


class EpisodeServer:
    """Serves episodes of `instances` (those with an image) while open; see the module docstring."""

    def __init__(self, instances: Sequence[SweInstance], *, max_open: int = 32,
                 limits: Limits = EPISODE_LIMITS) -> None:
        self.instances = {i.instance_id: i for i in instances if i.image is not None}
        self.max_open, self.limits = max_open, limits
        self.dir = Path(tempfile.mkdtemp(prefix="ma-episodes-"))
        self.dir.chmod(0o755)
        self.socket_path = self.dir / "episodes.sock"
        self.work = Path(tempfile.mkdtemp(prefix="ma-episode-trees-", dir="/var/tmp"))
        self._episodes: dict[str, _Episode] = {}
        self._lock = threading.Lock()
        self._server: _Server | None = None

    def mounts(self) -> list[Mount]:
        return [Mount(self.dir)]

    def env(self) -> dict[str, str]:
        return {SOCKET_ENV: str(self.socket_path)}

    def __enter__(self) -> EpisodeServer:
        server = self

        class Handler(socketserver.StreamRequestHandler):
            timeout = IDLE_TIMEOUT_S

            def handle(self) -> None:
                try:
                    line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
                except OSError:  # sent nothing in time
                    return
                answer = server.answer(line)
                with contextlib.suppress(OSError):
                    self.wfile.write(json.dumps(answer).encode() + b"\n")

        self._server = _Server(str(self.socket_path), Handler)
        self.socket_path.chmod(0o666)  # the harness connects as the sandbox uid
        threading.Thread(target=self._server.serve_forever, name="episode-server", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            episodes, self._episodes = list(self._episodes.values()), {}
        for episode in episodes:
            episode.session.close()
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def answer(self, line: bytes) -> dict[str, Any]:
        """One request's answer; never raises."""
        try:
            if len(line) > MAX_REQUEST_BYTES:
                raise RequestRefused(f"request over {MAX_REQUEST_BYTES} bytes")
            try:
                request = Request.validate_json(line)
            except ValidationError as e:
                first = e.errors()[0]
                raise RequestRefused(f"bad request: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
            return {"ok": True, **self._carry_out(request)}
        except (RequestRefused, SweTaskError, SandboxError) as e:
            return {"ok": False, "error": str(e)[:2000]}
        except Exception as e:  # one bad request never stops the server
            return {"ok": False, "error": f"{type(e).__name__}: {str(e)[:2000]}"}

    def _instance(self, task_id: str) -> SweInstance:
        instance = self.instances.get(task_id)
        if instance is None:
            raise RequestRefused(f"no train task {task_id[:200]!r} runs in an image here")
        return instance

    def _episode(self, episode_id: str) -> _Episode:
        with self._lock:
            episode = self._episodes.get(episode_id)
        if episode is None:
            raise RequestRefused(f"no open episode {episode_id[:64]!r}")
        return episode

    def _carry_out(self, request: Any) -> dict[str, Any]:
        if isinstance(request, OpenReq):
            return {"episode": self._open(self._instance(request.task_id))}
        if isinstance(request, RunReq):
            done = self._episode(request.episode).session.run(["bash", "-c", "exec 2>&1\n" + request.command],
                                                              timeout=request.timeout)
            output = done.stdout + (f"\n[command timed out after {request.timeout:.0f}s]" if done.timed_out else "")
            return {"exit_code": -9 if done.timed_out else done.exit_code, "output": _cut(output, request.max_chars)}
        if isinstance(request, DiffReq):
            done = self._episode(request.episode).session.run(
                ["bash", "-c", "git add -A >/dev/null 2>&1; git diff --cached --binary"], timeout=60)
            if len(done.stdout) > MAX_DIFF_BYTES:
                raise RequestRefused(f"the episode's diff is over {MAX_DIFF_BYTES} bytes")
            return {"diff": done.stdout if done.ok else ""}
        if isinstance(request, TestReq):
            from meta_agent.swe.image_verdict import evaluate_in_image

            verdict = evaluate_in_image(self._instance(request.task_id), request.diff)
            return {"verdict": verdict.model_dump(mode="json")}
        assert isinstance(request, CloseReq)
        with self._lock:
            episode = self._episodes.pop(request.episode, None)
        if episode is not None:
            episode.session.close()
            shutil.rmtree(episode.workdir.parent, ignore_errors=True)
        return {}

    def _open(self, instance: SweInstance) -> str:
        from meta_agent.swe.instance_session import open_instance_session
        from sandboxes.docker import DockerSandbox

        with self._lock:
            if len(self._episodes) >= self.max_open:
                raise RequestRefused(f"{self.max_open} episodes are open already; close one first")
        episode_id = uuid.uuid4().hex
        workdir = self.work / episode_id / "testbed"
        session = open_instance_session(instance, workdir, DockerSandbox(), self.limits)
        with self._lock:
            self._episodes[episode_id] = _Episode(workdir, session)
        return episode_id


def request(socket_path: Path, payload: dict[str, Any], timeout: float = 900.0) -> dict[str, Any]:
    """One request to a server, for tests and tools. The harness has its own client (`harness/swe/remote.py` in
    the template): harness code runs in its sandbox and cannot import meta-agent."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(timeout)
        conn.connect(str(socket_path))
        # A busy server answers and hangs up before it reads: its answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            conn.sendall(json.dumps(payload).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            try:
                chunk = conn.recv(1 << 16)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    if not data.endswith(b"\n"):
        return {"ok": False, "error": "the server hung up without an answer"}
    return dict(json.loads(data))
