"""What an agent can make the relay hold on the trusted side is bounded: request bodies, however they are
framed, and connections, however many it opens and however long it leaves them idle."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from meta_agent.agents.external.relay_http import MAX_CONNECTIONS, MAX_REQUEST_BYTES
from tests.llm.relay_helpers import CHECK, http_client, make_relay, raw
from tests.llm.replay_server import ReplayServer

HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
CHUNKED = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"


@pytest.fixture
def tmp_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short path: a Unix socket's address is limited to about 100 bytes."""
    return tmp_path_factory.mktemp("r")


def _status(answer: bytes) -> bytes:
    return answer.split(b"\r\n")[0]


def test_a_chunked_body_is_refused_at_the_first_chunk_size_that_breaks_the_limit(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("check")
    with make_relay(server.api_base, tmp_path) as relay:
        # "-1" once meant "read to the end of the connection": the agent keeps it open and keeps sending
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(relay.socket_path))
            s.sendall(CHUNKED + b"-1\r\n")
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused before it is all read
                s.sendall(b"x" * 1_000_000)
            first = s.recv(200)
        assert b" 400 " in _status(first) and b"hex digits" in raw(relay, CHUNKED + b"-1\r\n")
        for size in (b"+10", b"0x10", b"1_0", b"1" * 70):
            assert b" 400 " in _status(raw(relay, CHUNKED + size + b"\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n")), size
        assert b" 413 " in _status(raw(relay, CHUNKED + b"FFFFFFFF\r\n"))
        step = 1_000_000
        many = b"".join(f"{step:x}\r\n".encode() + b"x" * step + b"\r\n" for _ in range(MAX_REQUEST_BYTES // step + 1))
        assert b" 413 " in _status(raw(relay, CHUNKED + many + b"0\r\n\r\n"))
        assert b" 400 " in _status(raw(relay, CHUNKED + b"4\r\n" + b"x" * 40 + b"\r\n0\r\n\r\n")), "longer than said"
        assert b" 413 " in _status(raw(relay, HEAD + f"Content-Length: {MAX_REQUEST_BYTES + 1}\r\n\r\n".encode()))
    assert server.requests == [], "nothing malformed or oversized went upstream"


def test_idle_connections_are_capped_and_dropped(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("check")
    before = threading.active_count()
    with make_relay(server.api_base, tmp_path, idle_timeout_s=0.5) as relay:
        idle = []
        for _ in range(120):
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(relay.socket_path))
            s.settimeout(5)
            idle.append(s)
        time.sleep(0.2)
        threads = threading.active_count() - before
        started = time.monotonic()
        answers = [_drain(s) for s in idle]
        dropped_after = time.monotonic() - started
        with http_client(relay) as client:
            after = client.post("/v1/chat/completions", json=CHECK)
    assert threads <= MAX_CONNECTIONS + 1, f"{threads} threads for 120 idle connections"
    assert dropped_after < 3, "the relay closed every idle connection"
    busy = [a for a in answers if a]
    assert busy and all(b" 503 " in _status(a) for a in busy)
    assert "serves 16 connections" in json.loads(busy[0].split(b"\r\n\r\n", 1)[1])["error"]["message"]
    assert after.status_code == 200, "a working agent is served once the idle ones are gone"


def _drain(s: socket.socket) -> bytes:
    out = b""
    with s:
        while chunk := s.recv(65536):
            out += chunk
    return out
