"""Sandboxes for untrusted harness code: a protocol and backends chosen by name.

`get_backend("auto")` picks docker when an engine answers, else bwrap, and never
falls back to `process` (no isolation), which must be requested by name.
"""

from __future__ import annotations

from meta_agent.registry import Registry
from sandboxes.base import Limits, Mount, RunResult, Sandbox, SandboxError, Session

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

        name, _reason = choose_backend()
    return BACKENDS.get(name)()


__all__ = ["BACKENDS", "Limits", "Mount", "RunResult", "Sandbox", "SandboxError", "Session", "get_backend"]
