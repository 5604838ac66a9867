"""Helpers shared by the sandbox tests (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sandboxes.base import Session


@dataclass
class LoopbackServer:
    """A TCP server on 127.0.0.1 that greets each client with `token` and counts them."""

    port: int
    token: str
    accepted: list[str] = field(default_factory=list)


def host_processes_with(marker: str) -> list[int]:
    """Live (non-zombie) host processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until(condition: Callable[[], object], timeout: float = 30.0) -> bool:
    """Poll `condition()` until true or `timeout` passes (for teardown that is asynchronous)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


def assert_still_works(session: Session) -> None:
    """The session survived whatever the previous command did."""
    result = session.run(["echo", "still working"], timeout=60)
    assert result.ok, result
    assert result.stdout == "still working\n"
