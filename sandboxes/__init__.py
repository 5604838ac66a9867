"""Sandboxes for untrusted harness code: a protocol and backends chosen by name.

`get_backend("auto")` picks docker when an engine answers (and the image is built), else
bwrap, and never falls back to `process` (no isolation), which must be requested by name.
"""

from __future__ import annotations

import functools
import sys

from sandboxes.base import (
    Limits,
    Mount,
    RunResult,
    Sandbox,
    SandboxError,
    Session,
    clean_env,
    host_python_mounts,
)
from sandboxes.registry import Registry

BACKENDS: Registry[Sandbox] = Registry(
    "sandbox backend",
    {
        "docker": "sandboxes.docker:DockerSandbox",
        "bwrap": "sandboxes.bwrap:BwrapSandbox",
        "process": "sandboxes.process:ProcessSandbox",
    },
)


def get_backend(name: str = "auto") -> Sandbox:
    """An instance of the named backend; `auto` resolves to docker or bwrap (see sandboxes.auto)."""
    if name == "auto":
        from sandboxes.auto import choose_backend

        name, reason = choose_backend()
        _announce(f"sandbox: auto picked '{name}': {reason}")
    return BACKENDS.get(name)()


@functools.cache
def _announce(text: str) -> None:
    """Say `auto`'s choice once per process, not once per session a long run opens."""
    print(text, file=sys.stderr)


__all__ = [
    "BACKENDS",
    "Limits",
    "Mount",
    "RunResult",
    "Sandbox",
    "SandboxError",
    "Session",
    "clean_env",
    "get_backend",
    "host_python_mounts",
]
