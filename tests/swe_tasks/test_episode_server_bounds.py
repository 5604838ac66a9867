"""The episode server against a hostile harness: what it refuses and what it never lets pile up (no engine needed:
none of these requests gets as far as a container)."""

from __future__ import annotations

import functools
import importlib.util
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from meta_agent.paths import harness_template
from meta_agent.swe import episode_server
from meta_agent.swe.episode_server import EpisodeServer, request
from meta_agent.swe.verdict import syntax_errors


def _raw(sock: Path, data: bytes) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(30)
        conn.connect(str(sock))
        conn.sendall(data)
        return dict(json.loads(conn.makefile("rb").readline()))


@functools.cache
def _harness_client() -> Any:
    """The template's own client module, loaded from its file (harness code cannot import meta-agent)."""
    spec = importlib.util.spec_from_file_location("remote", harness_template() / "harness" / "swe" / "remote.py")
    assert spec and spec.loader
    remote = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(remote)
    return remote


def _harness_call(sock: Path, payload: dict[str, object]) -> dict[str, object]:
    """One request through the template's client, as harness code makes it."""
    remote = _harness_client()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(remote.SOCKET_ENV, str(sock))
        try:
            return dict(remote.call(payload))
        except RuntimeError as refused:
            return {"ok": False, "error": str(refused)}


def test_malformed_unknown_and_oversized_requests_are_refused_and_the_server_goes_on() -> None:
    with EpisodeServer([]) as server:
        sock = server.socket_path
        answers = [_raw(sock, b"not json\n"), _raw(sock, b'{"op": "exec", "argv": ["sh"]}\n'),
                   _raw(sock, json.dumps({"op": "run", "episode": "e", "command": "x" * 30_000}).encode() + b"\n"),
                   _raw(sock, json.dumps({"op": "run", "episode": "e", "command": "ls", "timeout": 1e9}).encode()
                        + b"\n"),
                   _raw(sock, b'{"op": "open", "task_id": "../../etc/passwd"}\n')]
        assert [a["ok"] for a in answers] == [False] * 5
        assert "no train task" in str(answers[-1]["error"])
        assert request(sock, {"op": "close", "episode": "nothing-open"}) == {"ok": True}  # closing twice is fine


def test_idle_connections_are_dropped_and_a_flood_is_answered_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(episode_server, "IDLE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(episode_server, "MAX_CONNECTIONS", 4)
    with EpisodeServer([]) as server:
        idle = [socket.socket(socket.AF_UNIX) for _ in range(4)]
        for conn in idle:
            conn.connect(str(server.socket_path))
        time.sleep(0.3)
        # The server answers `busy` and hangs up at once, whether or not the client has written yet: both
        # clients must read that answer rather than fail on the write (a race that a loaded machine loses).
        for _ in range(20):
            assert "busy" in str(request(server.socket_path, {"op": "close", "episode": "x"})["error"])
            assert "busy" in str(_harness_call(server.socket_path, {"op": "close", "episode": "x"})["error"])
        time.sleep(1.5)  # the idle ones are dropped, and their slots given back
        assert request(server.socket_path, {"op": "close", "episode": "x"}) == {"ok": True}
        for conn in idle:
            conn.close()


def test_a_syntax_check_never_reads_through_a_link_out_of_the_tree(tmp_path: Path) -> None:
    """A diff can make `pkg` a link to a host directory; the parser's message would quote the host file."""
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "secret.py").write_text("password = 'hunter2' +\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pkg").symlink_to(outside)
    (tree / "ok.py").write_text("x = (\n")
    assert syntax_errors(tree, ["pkg/secret.py"]) == []
    assert [e.split(":")[0] for e in syntax_errors(tree, ["ok.py"])] == ["ok.py"]
