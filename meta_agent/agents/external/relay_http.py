"""The relay's HTTP side, facing the sandboxed agent: bounded in connections, idle time and request size.

Everything here runs on the trusted side and answers whatever the agent sends, so each resource an agent
could pile up has a cap: at most `MAX_CONNECTIONS` connections are served at once (one thread each; the
next is answered 503 and closed), a connection that sends nothing for `IDLE_TIMEOUT_S` is dropped, and a
request body is read only up to `MAX_REQUEST_BYTES`, whether its size is declared (Content-Length) or
chunked, whatever chunk sizes it claims.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any

MAX_REQUEST_BYTES = 8_000_000
MAX_CONNECTIONS = 16
"""Agents make one model call at a time, a few with sub-agents: 16 is room to spare, and 16 threads."""
IDLE_TIMEOUT_S = 60.0
"""How long one read from or write to the agent may wait; the upstream model has its own timeout."""
LINGER_S = 1.0
"""After a refusal, how long what the agent still sends is read and dropped, so the refusal reaches it."""
CHUNK_LINE_BYTES = 64
MAX_TRAILER_LINES = 32
_CHUNK_SIZE = re.compile(rb"[0-9a-fA-F]{1,8}")  # int(x, 16) would also take "-1", "+5", "0x5" and "1_0"
_DIGITS = re.compile(r"[0-9]+")


class Refused(Exception):
    """A request the relay will not forward: answered with `status` and `message`, nothing sent upstream."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def read_body(h: BaseHTTPRequestHandler) -> bytes:
    """The request body, never more than MAX_REQUEST_BYTES of it read; Refused (413 too big, 400 malformed)."""
    try:
        return _body(h)
    except OSError as e:  # the agent hung up or went quiet mid-request
        raise Refused(400, f"request body not received: {e}") from e


def _body(h: BaseHTTPRequestHandler) -> bytes:
    encoding = (h.headers.get("transfer-encoding") or "").strip().lower()
    if encoding == "chunked":
        return _chunked(h)
    if encoding:
        raise Refused(400, f"transfer-encoding {encoding[:50]!r} is not supported: send the body with Content-Length "
                           f"or chunked")
    declared = (h.headers.get("content-length") or "0").strip()
    if not _DIGITS.fullmatch(declared):
        raise Refused(400, f"malformed Content-Length {declared[:50]!r}: send the body's size in bytes")
    if len(declared) > 12 or int(declared) > MAX_REQUEST_BYTES:  # int() of thousands of digits is an error too
        raise Refused(413, f"request of {declared[:30]} bytes: over the relay's {MAX_REQUEST_BYTES:,}-byte limit; "
                           f"send less context")
    return _exactly(h, int(declared))


def _exactly(h: BaseHTTPRequestHandler, size: int) -> bytes:
    data = h.rfile.read(size) if size else b""
    if len(data) < size:
        raise Refused(400, f"request body cut off after {len(data):,} of {size:,} bytes")
    return data


def _chunked(h: BaseHTTPRequestHandler) -> bytes:
    body = bytearray()
    while True:
        line = h.rfile.readline(CHUNK_LINE_BYTES + 1)
        size_field = line.split(b";")[0].strip()
        if not line.endswith(b"\n") or not _CHUNK_SIZE.fullmatch(size_field):
            raise Refused(400, f"malformed chunked request body: chunk-size line {line[:CHUNK_LINE_BYTES]!r} is "
                               f"not 1 to 8 hex digits")
        size = int(size_field, 16)
        if size == 0:
            for _ in range(MAX_TRAILER_LINES):
                if h.rfile.readline(CHUNK_LINE_BYTES + 1) in (b"\r\n", b"\n", b""):
                    return bytes(body)
            raise Refused(400, f"chunked request body with over {MAX_TRAILER_LINES} trailer lines")
        if len(body) + size > MAX_REQUEST_BYTES:
            raise Refused(413, f"chunked request over the relay's {MAX_REQUEST_BYTES:,}-byte limit; send less context")
        body += _exactly(h, size)
        if h.rfile.readline(3) not in (b"\r\n", b"\n"):
            raise Refused(400, "malformed chunked request body: a chunk is longer than its size says")


class RelayHandler(BaseHTTPRequestHandler):
    server: RelayServer
    protocol_version = "HTTP/1.0"  # one exchange per connection; a streamed answer ends when it closes

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout_s)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def address_string(self) -> str:
        return "sandbox"

    def do_GET(self) -> None:
        self.server.exchange(self)

    def do_POST(self) -> None:
        self.server.exchange(self)


class RelayServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A thread per connection, at most `max_connections` of them; each exchange goes to `exchange`."""

    daemon_threads = True
    request_queue_size = 64  # connections waiting for accept(), which hands them on at once

    def __init__(self, path: str, exchange: Callable[[RelayHandler], None], *, max_connections: int = MAX_CONNECTIONS,
                 idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        self.exchange, self.idle_timeout_s = exchange, idle_timeout_s
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(path, RelayHandler)

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _busy(request if isinstance(request, socket.socket) else request[1], self.max_connections)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread started, so none will give the slot back
            raise

    def process_request_thread(self, request: socket.socket | tuple[bytes, socket.socket],
                               client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _busy(conn: socket.socket, cap: int) -> None:
    body = error_body(f"the relay already serves {cap} connections from this sandbox: wait for one to finish, or "
                      f"make fewer parallel requests", kind="overloaded_error")
    with contextlib.suppress(OSError):  # the accepting thread must never wait on an agent
        conn.settimeout(1)
        conn.sendall(b"HTTP/1.0 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                     b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))


class ClientSink:
    """The agent's end of one exchange. Once it hangs up (or stops reading), writes are dropped without error,
    so the relay still reads the upstream answer to its end and books what the model used."""

    def __init__(self, h: BaseHTTPRequestHandler) -> None:
        self.h = h
        self.gone = False

    def head(self, status: int, headers: Iterable[tuple[str, str]]) -> None:
        def send() -> None:
            self.h.send_response(status)
            for k, v in headers:
                self.h.send_header(k, v)
            self.h.send_header("connection", "close")
            self.h.end_headers()

        self._try(send)

    def write(self, data: bytes) -> None:
        def send() -> None:
            self.h.wfile.write(data)
            self.h.wfile.flush()

        self._try(send)

    def linger(self) -> None:
        """End the answer, then drop what the agent still sends for up to LINGER_S: closing on unread data resets
        the connection, and the agent would see a reset instead of the refusal it was just sent."""
        deadline = time.monotonic() + LINGER_S
        conn = self.h.connection
        with contextlib.suppress(OSError):
            self.h.wfile.flush()
            conn.shutdown(socket.SHUT_WR)
            while (left := deadline - time.monotonic()) > 0:
                conn.settimeout(left)
                if not conn.recv(65536):
                    break

    def _try(self, send: Callable[[], None]) -> None:
        if self.gone:
            return
        try:
            send()
        except OSError:
            self.gone = True


def error_body(message: str, kind: str = "invalid_request_error") -> bytes:
    """An error answer both API families' clients show: Anthropic's shape, with OpenAI's `error.message`."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
