"""Episodes of tasks that run in their own container image, carried out by meta-agent's episode server.

A task whose metadata says `"environment": "image"` (a SWE-bench-family instance with its own image) has no
archive: its repository, dependencies and tests live in the image, and this sandbox has no container engine.
meta-agent runs a server for them while training and names its socket in META_AGENT_EPISODES; each call
here is one request to it (meta_agent/swe/episode_server.py documents them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from typing import Any

SOCKET_ENV = "META_AGENT_EPISODES"
TIMEOUT_S = 1800.0
_TESTED: dict[tuple[str, str], dict[str, Any]] = {}


def in_image(task: dict[str, Any]) -> bool:
    return task.get("metadata", {}).get("environment") == "image"


def call(payload: dict[str, Any]) -> dict[str, Any]:
    """The server's answer to one request; RuntimeError with its reason when it refuses."""
    path = os.environ.get(SOCKET_ENV)
    if not path:
        raise RuntimeError(f"task runs in its own image, but {SOCKET_ENV} is not set: meta-agent sets it when "
                           "it trains on such tasks")
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(TIMEOUT_S)
        conn.connect(path)
        # A busy server answers and hangs up before it reads: its answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            conn.sendall(json.dumps(payload).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            try:
                chunk = conn.recv(1 << 16)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    answer = json.loads(data) if data.endswith(b"\n") else {"ok": False, "error": "the server hung up"}
    if not answer.get("ok"):
        raise RuntimeError(f"episode server refused {payload.get('op')}: {answer.get('error', 'no answer')}")
    return answer


def open_episode(task: dict[str, Any]) -> str:
    return str(call({"op": "open", "task_id": task["id"]})["episode"])


def run(episode: str, command: str, timeout: float, max_chars: int) -> tuple[int, str]:
    answer = call({"op": "run", "episode": episode, "command": command, "timeout": timeout,
                   "max_chars": max_chars})
    return int(answer["exit_code"]), str(answer["output"])


def diff(episode: str) -> str:
    return str(call({"op": "diff", "episode": episode})["diff"])


def close(episode: str) -> None:
    call({"op": "close", "episode": episode})


def test(task: dict[str, Any], patch: str) -> dict[str, Any]:
    """The instance's tests on `patch`, graded in its image, in `testrun.evaluate`'s shape. The test files a
    patch changes are always put back there (the image's grading is SWE-bench's, which never trusts them)."""
    f2p, p2p = task["metadata"].get("fail_to_pass", []), task["metadata"].get("pass_to_pass", [])
    if not patch.strip():  # the base fails every FAIL_TO_PASS test by construction
        return {"applies": True, "f2p_total": len(f2p), "p2p_total": len(p2p), "f2p_passed": 0, "p2p_failed": 0,
                "syntax_error": False}
    key = (task["id"], hashlib.sha256(patch.encode()).hexdigest())
    if key not in _TESTED:
        _TESTED[key] = _graded(call({"op": "test", "task_id": task["id"], "diff": patch})["verdict"])
    return _TESTED[key]


def _graded(verdict: dict[str, Any]) -> dict[str, Any]:
    return {"applies": verdict["diff_applies"], "f2p_total": verdict["fail_to_pass_total"],
            "p2p_total": verdict["pass_to_pass_total"], "f2p_passed": verdict["fail_to_pass_passed"],
            "p2p_failed": verdict["pass_to_pass_total"] - verdict["pass_to_pass_passed"],
            "syntax_error": verdict["syntax_error"]}
