"""A relay in front of a test upstream, and the ways an agent in the sandbox talks to it."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx

from meta_agent.agents.external.relay import ModelRelay, Upstream
from meta_agent.llm.accounting import Ledger
from meta_agent.llm.budget import LLMBudget

CHECK = {"model": "replay", "messages": [
    {"role": "system", "content": "You are meta-agent's connectivity check. Answer by calling the tool."},
    {"role": "user", "content": "Use the add tool to add 2 and 3."}]}


def check_of(chars: int) -> dict[str, Any]:
    """The connectivity check with a user message padded to about `chars` characters (chars / 4 tokens)."""
    system, user = CHECK["messages"]
    return {**CHECK, "messages": [system, {**user, "content": user["content"] + " " + "x" * chars}]}


def make_relay(api_base: str, tmp_path: Path, budget: LLMBudget | None = None, **kw: Any) -> ModelRelay:
    return ModelRelay(Upstream(api_base, "authorization", "sk-real-key"), ledger=Ledger(tmp_path / "u.json"),
                      budget=budget or LLMBudget(), agent="coder", scope="g0", transcript=tmp_path / "t.jsonl",
                      socket_dir=tmp_path, model="openai/replay", **kw)


def http_client(relay: ModelRelay) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(relay.socket_path)), base_url="http://127.0.0.1")


def raw(relay: ModelRelay, data: bytes, timeout_s: float = 10) -> bytes:
    """Send `data` on one connection as it is and read the answer until the relay closes it."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout_s)
        s.connect(str(relay.socket_path))
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def post(path: str, body: dict[str, Any]) -> bytes:
    """A raw HTTP request an agent could send, with its JSON body."""
    data = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            .encode() + data)
