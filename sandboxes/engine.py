"""Connecting to a Docker engine: DOCKER_HOST if set, else the default local socket."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException

from sandboxes.base import SandboxError

PING_TIMEOUT_S = 3.0
API_TIMEOUT_S = 120.0
PRIVATE_ENGINE = Path("/run/meta-agent-docker")
START_COMMAND = (
    f"mkdir -p {PRIVATE_ENGINE} && dockerd --iptables=false --bridge=none "
    f"--data-root /var/lib/meta-agent-docker --exec-root {PRIVATE_ENGINE}/exec "
    f"-H unix://{PRIVATE_ENGINE}/docker.sock >{PRIVATE_ENGINE}/dockerd.log 2>&1 &  "
    f"export DOCKER_HOST=unix://{PRIVATE_ENGINE}/docker.sock"
)
"""A private engine (as root) that needs no bridge or iptables: sandbox containers run with no network."""
START_HINT = (
    "start the system engine (`systemctl start docker`) or a private one as root:\n"
    f"    {START_COMMAND}\n"
    "  then build the sandbox image: `meta-agent sandbox build-image`; "
    "not installed: `scripts/system-deps.sh` (or `apt-get install docker.io debootstrap`)"
)


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


@dataclass(frozen=True)
class EngineStatus:
    answers: bool
    detail: str
    """Server version when it answers; otherwise what went wrong."""


def engine_status() -> EngineStatus:
    """Whether a Docker engine answers at DOCKER_HOST (or the default socket), quickly."""
    try:
        client = docker.from_env(timeout=int(PING_TIMEOUT_S))
        try:
            version = client.version().get("Version", "?")
        finally:
            client.close()
    except (DockerException, OSError) as err:
        return EngineStatus(False, f"no Docker engine answers at {engine_address()}: {_short(err)}")
    return EngineStatus(True, f"Docker engine {version} at {engine_address()}")


def docker_client(timeout: float = API_TIMEOUT_S) -> docker.DockerClient:
    """A client for the engine; SandboxError saying how to get one if none answers."""
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except (DockerException, OSError) as err:
        raise SandboxError(f"no Docker engine answers at {engine_address()} ({_short(err)}); {START_HINT}") from err
    return client


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[-1][:300] if text else type(err).__name__
