"""The relay, an external coder's only way out of its sandbox: one endpoint, the real key added outside,
usage booked, budgets enforced, and no other network from inside the sandbox."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from meta_agent import inside
from meta_agent.agents.external.relay import ModelRelay, exchanges
from meta_agent.agents.external.wire import answer_of, usage_of
from meta_agent.config import ConfigFileError, EvolveConfig
from meta_agent.llm.budget import LLMBudget
from sandboxes import Mount, Sandbox
from tests.llm.conftest import make_proposer
from tests.llm.relay_helpers import CHECK, http_client, make_relay, raw
from tests.llm.replay_formats import anthropic_message, anthropic_stream, response_object, response_stream
from tests.llm.replay_server import RecordedCall, ReplayServer, Turn


def _relay(server: ReplayServer, tmp_path: Path, budget: LLMBudget | None = None, **kw: Any) -> ModelRelay:
    return make_relay(server.api_base, tmp_path, budget, **kw)


def test_the_relay_forwards_under_its_base_with_the_real_key_and_books_the_usage(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("check")
    with _relay(server, tmp_path) as relay, http_client(relay) as client:
        r = client.post("/v1/chat/completions", json=CHECK, headers={"authorization": "Bearer what-the-agent-sent"})
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"
        assert server.state.headers[-1]["authorization"] == "Bearer sk-real-key"
        for path in ("/v2/anything", "/", "/v1/../admin", "/v1/%2e%2e/admin", "/v1x/chat"):
            refused = client.post(path, json=CHECK)
            assert refused.status_code == 403 and "only forwards to" in refused.json()["error"]["message"], path
    assert len(server.requests) == 1, "nothing outside the base reached the server"
    usage = r.json()["usage"]
    total = relay.ledger.total
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (
        1, usage["prompt_tokens"], usage["completion_tokens"])
    [call] = exchanges(tmp_path / "t.jsonl")
    assert call["status"] == 200 and "sk-real-key" not in (tmp_path / "t.jsonl").read_text()


def test_the_relay_refuses_once_the_run_budget_or_the_session_cap_is_used(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("check")
    with _relay(server, tmp_path / "a", LLMBudget(tokens=10)) as relay, http_client(relay) as client:
        assert client.post("/v1/chat/completions", json=CHECK).status_code == 200
        refused = client.post("/v1/chat/completions", json=CHECK)
    assert refused.status_code == 403 and "token budget used up" in refused.json()["error"]["message"]
    with _relay(server, tmp_path / "b", max_requests=1) as relay, http_client(relay) as client:
        assert client.post("/v1/chat/completions", json=CHECK).status_code == 200
        refused = client.post("/v1/chat/completions", json=CHECK)
    assert refused.status_code == 403 and "request cap (1)" in refused.json()["error"]["message"]
    assert len(server.requests) == 2


@pytest.fixture
def tmp_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short path: a Unix socket's address is limited to about 100 bytes."""
    return tmp_path_factory.mktemp("r")


def test_usage_and_the_answer_are_read_from_every_wire_format() -> None:
    turn = Turn(content="fixing it", tool_calls=[RecordedCall(name="Bash", arguments={"command": "ls"})])
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}], "input": [{"role": "user"}]}
    message = anthropic_message(body, "c", 0, turn)
    assert usage_of(anthropic_stream(message).encode()) == (message["usage"]["input_tokens"],
                                                            message["usage"]["output_tokens"])
    assert usage_of(json.dumps(message).encode()) == (message["usage"]["input_tokens"],
                                                      message["usage"]["output_tokens"])
    response = response_object(body, "c", 0, turn)
    assert usage_of(response_stream(response).encode()) == (response["usage"]["input_tokens"],
                                                            response["usage"]["output_tokens"])
    assert usage_of(b'{"usage": {"prompt_tokens": 7, "completion_tokens": 3}}') == (7, 3)
    said = 'fixing it\n-> Bash({"command": "ls"})'
    assert answer_of(anthropic_stream(message).encode()) == said == answer_of(json.dumps(message).encode())
    assert answer_of(response_stream(response).encode()) == said == answer_of(json.dumps(response).encode())
    assert usage_of(b"not json at all") == (None, None)


def test_inside_the_sandbox_the_relay_is_the_only_way_out(
        serve: Callable[..., ReplayServer], sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("check")
    probe = f"""
import json, os, socket, urllib.request
def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError as e:
        return type(e).__name__
req = urllib.request.Request(os.environ["BASE"] + "/chat/completions", data=json.dumps({json.dumps(CHECK)}).encode(),
                             headers={{"content-type": "application/json"}})
status = urllib.request.urlopen(req, timeout=30).status
print(json.dumps({{"relay": status, "host_loopback": tcp("127.0.0.1", {server.port}), "outside": tcp("1.1.1.1", 443),
                  "key": os.environ.get("OPENAI_API_KEY")}}))
"""
    work = tmp_path / "work"
    work.mkdir()
    tmp_path.chmod(0o755)  # sandboxed code runs as an unprivileged uid
    with _relay(server, tmp_path) as relay, sandbox.open(work, mounts=[Mount(tmp_path)]) as session:
        spec = {"socket": str(relay.socket_path), "argv": [sys.executable, "-c", probe],
                "env": {"BASE": "http://127.0.0.1:{port}/v1"}, "timeout_s": 60}
        result = session.run([sys.executable, "-c", inside.source("sandbox_launch.py"), json.dumps(spec)],
                             timeout=120)
    ran = json.loads(result.stdout.strip().splitlines()[-1])
    assert ran["exit_code"] == 0, ran["stderr"]
    seen = json.loads(ran["stdout"].strip().splitlines()[-1])
    assert seen["relay"] == 200
    assert seen["host_loopback"] != "connected", "the host's own loopback (the model server) is not reachable"
    assert seen["outside"] != "connected" and seen["key"] is None
    assert server.state.headers[-1]["authorization"] == "Bearer sk-real-key"


def test_an_external_coder_that_cannot_work_fails_before_the_run_starts(
        replay_server: ReplayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_AGENT_CODERS_DIR", str(tmp_path / "nothing-here"))
    with pytest.raises(ConfigFileError, match="make setup"):
        make_proposer(replay_server, tmp_path / "a", coder="codex", coder_model="openai/gpt-5.5")
    monkeypatch.delenv("META_AGENT_CODERS_DIR")
    with pytest.raises(ConfigFileError, match="cannot be reached"):
        make_proposer(replay_server, tmp_path / "b", coder="mini-swe-agent", api_base="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigFileError, match="speaks the anthropic API"):
        make_proposer(replay_server, tmp_path / "c", coder="claude-code", coder_model="openai/gpt-5.5")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigFileError, match="ANTHROPIC_API_KEY is not set"):
        make_proposer(replay_server, tmp_path / "d", coder="claude-code", coder_model="anthropic/claude-sonnet-4-5",
                      api_base=None)
    with pytest.raises(ValueError, match="--coder codex needs --proposer llm"):
        EvolveConfig(domain="math", proposer="skills", llm={"coder": "codex"})


def test_the_relay_reads_chunked_bodies_and_refuses_malformed_ones(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("check")
    body = json.dumps(CHECK).encode()
    with _relay(server, tmp_path) as relay:
        def status(data: bytes) -> bytes:
            return raw(relay, data).split(b"\r\n")[0]

        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        chunked = head + b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
        assert b" 200 " in status(chunked)
        assert b" 400 " in status(head + b"Content-Length: nope\r\n\r\n")
        assert b" 413 " in status(head + b"Content-Length: 99999999999\r\n\r\n")
        assert b" 400 " in status(head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")
    assert len(server.requests) == 1
