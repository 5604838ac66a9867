"""Docker's hijacked attach/exec connections: the OS socket under them, and their multiplexed frames."""

from __future__ import annotations

import socket
import struct
from typing import Any

from sandboxes.base import SandboxError

FRAME = struct.Struct(">BxxxL")
STDOUT, STDERR = 1, 2


def raw_socket(sock: Any) -> socket.socket:
    """The OS socket under what docker-py returns for a hijacked (attach/exec) connection."""
    raw = getattr(sock, "_sock", sock)
    if not isinstance(raw, socket.socket):
        raise SandboxError(f"unsupported Docker transport {type(sock).__name__}; use a unix:// or tcp:// DOCKER_HOST")
    return raw


def already_buffered(sock: Any) -> bytes:
    """Bytes the HTTP client read past the upgrade headers; they would be lost otherwise."""
    try:
        reader = sock._response.raw._fp.fp
    except AttributeError:
        return b""
    raw = raw_socket(sock)
    raw.setblocking(False)
    try:
        data: bytes = reader.peek() or b""
        return reader.read(len(data)) if data else b""
    except (BlockingIOError, ValueError, OSError):
        return b""
    finally:
        raw.setblocking(True)


class FrameDemux:
    """Splits Docker's multiplexed stream (8-byte header per frame) into stdout and stderr."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= FRAME.size:
            stream, size = FRAME.unpack_from(self._buffer)
            if len(self._buffer) < FRAME.size + size:
                break
            frames.append((stream, self._buffer[FRAME.size : FRAME.size + size]))
            self._buffer = self._buffer[FRAME.size + size :]
        return frames
