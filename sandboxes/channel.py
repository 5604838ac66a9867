"""Host side of the channel to a session's PID 1 (`sandboxes.sandbox_init`)."""

from __future__ import annotations

import array
import json
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandboxes import sandbox_init
from sandboxes.identity import SandboxIdentity
from sandboxes.sandbox_init import HEADER, encode

INIT_SCRIPT = Path(sandbox_init.__file__).resolve()
"""Bound read-only into every sandbox at this same path: its only file from this package."""


def init_command(python: str, in_fd: int, out_fd: int, drop_to: SandboxIdentity | None = None) -> list[str]:
    """argv that starts the session's PID 1 with the host interpreter (bound read-only inside);
    with `drop_to`, PID 1 switches to that uid/gid before it serves anything."""
    argv = [python, "-I", "-S", str(INIT_SCRIPT), str(in_fd), str(out_fd)]
    return [*argv, f"{drop_to.uid}:{drop_to.gid}"] if drop_to is not None else argv


class MessageReader:
    """Splits a byte stream into the init's messages."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._buffer)
            if len(self._buffer) < HEADER.size + size:
                break
            messages.append(json.loads(self._buffer[HEADER.size : HEADER.size + size]))
            self._buffer = self._buffer[HEADER.size + size :]
        return messages


def send_message(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    """Send one message, with `fds` attached (SCM_RIGHTS) to its first byte."""
    data = encode(message)
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
    sent = sock.sendmsg([data], ancillary)
    if sent < len(data):
        sock.sendall(data[sent:])
