"""Fixtures for the sandbox tests: a Docker engine (started privately if none answers),
the harness image (built once, cached by content hash), and one session per backend."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxes.base import Limits, Sandbox, Session
from tests.sandboxes.sandbox_test_helpers import LoopbackServer

# Small limits so the attacks in the tests hit them quickly; generous timeout for slow CI.
TEST_LIMITS = Limits(memory_mb=256, cpus=1.0, pids=64, timeout_s=60.0, output_bytes=64_000)
PRIVATE_DOCKER = Path("/tmp/meta-agent-test-docker")
PRIVATE_DOCKER_DATA = Path("/var/tmp/meta-agent-test-docker-data")  # outlives runs: the image stays cached
WORK_ROOT = Path("/var/tmp/meta-agent-sandbox-tests")


def _engine_answers() -> bool:
    from sandboxes.engine import engine_status

    return engine_status().answers


def _start_private_dockerd() -> tuple[subprocess.Popen[bytes] | None, str]:
    """A dockerd of our own (same flags as .ci/run); (process, '') or (None, why not)."""
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        return None, "dockerd is not installed (apt-get install docker.io)"
    if os.geteuid() != 0:
        return None, "starting a private dockerd needs root"
    PRIVATE_DOCKER.mkdir(parents=True, exist_ok=True)
    sock = PRIVATE_DOCKER / "docker.sock"
    log = open(PRIVATE_DOCKER / "dockerd.log", "wb")  # noqa: SIM115 - the daemon keeps writing to it
    proc = subprocess.Popen(
        [
            dockerd,
            "--iptables=false",
            "--bridge=none",
            "--data-root",
            str(PRIVATE_DOCKER_DATA),
            "--exec-root",
            str(PRIVATE_DOCKER / "exec"),
            "--pidfile",
            str(PRIVATE_DOCKER / "dockerd.pid"),
            "-H",
            f"unix://{sock}",
        ],
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    os.environ["DOCKER_HOST"] = f"unix://{sock}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (PRIVATE_DOCKER / "dockerd.log").read_text(errors="replace")[-500:]
            return None, f"dockerd exited with {proc.returncode}: {tail}"
        if _engine_answers():
            return proc, ""
        time.sleep(0.2)
    _stop(proc)
    return None, "dockerd did not answer within 60s"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[str]:
    """DOCKER_HOST of an engine that answers; skips (saying why) only if none can be started."""
    from sandboxes.engine import engine_address

    if _engine_answers():
        yield engine_address()
        return
    previous = os.environ.get("DOCKER_HOST")
    proc, why = _start_private_dockerd()
    if proc is None:
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous
        pytest.skip(f"no Docker engine answers at {previous or 'the default socket'} and none could be started: {why}")
    try:
        yield engine_address()
    finally:
        _stop(proc)
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous


@pytest.fixture(scope="session")
def docker_image(docker_engine: str) -> str:
    """The harness image for the current definitions (built here unless already cached)."""
    from sandboxes.engine import docker_client
    from sandboxes.image import build_image

    client = docker_client()
    try:
        return build_image(client, log=lambda _line: None)
    finally:
        client.close()


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> Sandbox:
    """Each isolating backend in turn."""
    if request.param == "docker":
        from sandboxes.docker import DockerSandbox

        return DockerSandbox(image=request.getfixturevalue("docker_image"))
    from sandboxes.bwrap import BwrapSandbox

    return BwrapSandbox()


@pytest.fixture
def area() -> Iterator[Path]:
    """A fresh directory outside /tmp (whose sandbox view is a private tmpfs) holding the workdir."""
    path = WORK_ROOT / uuid.uuid4().hex[:12]
    (path / "work").mkdir(parents=True)
    (path / "work" / "README").write_text("a candidate checkout\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def workdir(area: Path) -> Path:
    return area / "work"


@pytest.fixture
def session(backend: Sandbox, workdir: Path) -> Iterator[Session]:
    with backend.open(workdir, limits=TEST_LIMITS) as opened:
        yield opened


@pytest.fixture
def loopback_server() -> Iterator[LoopbackServer]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    server = LoopbackServer(listener.getsockname()[1], f"loopback-token-{uuid.uuid4().hex}")
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = listener.accept()
            except TimeoutError:
                continue
            server.accepted.append(f"{addr[0]}:{addr[1]}")
            with conn:
                conn.sendall(server.token.encode())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server
    stop.set()
    thread.join(timeout=5)
    listener.close()
