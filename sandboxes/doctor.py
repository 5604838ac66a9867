"""What `meta-agent sandbox doctor` reports: each backend's state and what `auto` would pick."""

from __future__ import annotations

from dataclasses import dataclass

from sandboxes.auto import Availability, bwrap_availability, choose_backend, docker_availability
from sandboxes.base import SandboxError
from sandboxes.identity import sandbox_identity


@dataclass(frozen=True)
class Report:
    backends: list[Availability]
    auto: str
    """`auto`'s pick and why, or why it cannot pick anything."""
    identity: str
    """The uid sandboxed code runs as, or why the configuration is refused."""


def _identity() -> str:
    try:
        return sandbox_identity().describe()
    except SandboxError as err:
        return f"REFUSED: {err}"


def diagnose() -> Report:
    docker, bwrap = docker_availability(), bwrap_availability()
    process = Availability("process", True, "always available but gives NO isolation; used only when requested by name")
    try:
        name, reason = choose_backend()
        auto = f"{name} ({reason})"
    except SandboxError as err:
        auto = f"nothing: {err}"
    return Report([docker, bwrap, process], auto, _identity())


def render(report: Report) -> str:
    lines = []
    for item in report.backends:
        state = "usable" if item.usable else "not usable"
        lines.append(f"{item.backend:8} {state:11} {item.detail}")
        if item.fix:
            lines.append(f"{'':8} {'':11} to fix: {item.fix}")
    lines.append(f"auto  -> {report.auto}")
    lines.append(f"sandboxed code runs as {report.identity}")
    return "\n".join(lines)
