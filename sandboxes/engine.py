"""Connecting to a Docker engine: DOCKER_HOST if set, else the default local socket."""

from __future__ import annotations

import os
from dataclasses import dataclass

import docker
from docker.errors import DockerException

from sandboxes.base import SandboxError

PING_TIMEOUT_S = 3.0
API_TIMEOUT_S = 120.0
START_HINT = (
    "start one (`sudo systemctl start docker`, or a private one: `dockerd --iptables=false "
    "--bridge=none --data-root DIR --exec-root DIR -H unix://SOCK` and export DOCKER_HOST=unix://SOCK); "
    "if it is not installed: `apt-get install docker.io` (Debian/Ubuntu)"
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
