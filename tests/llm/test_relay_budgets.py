"""The relay's budgets hold against a hostile agent and a lying upstream: each test is one way around them,
tried from the agent's side of the socket."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from meta_agent.agents.external.relay import exchanges
from meta_agent.llm.budget import LLMBudget
from tests.llm.lying_upstream import LyingUpstream, sse_chat
from tests.llm.relay_helpers import CHECK, check_of, http_client, make_relay, post
from tests.llm.replay_formats import anthropic_message
from tests.llm.replay_server import Fault, RecordedCall, ReplayServer, Turn


@pytest.fixture
def tmp_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short path: a Unix socket's address is limited to about 100 bytes."""
    return tmp_path_factory.mktemp("r")


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _completion(usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-lie", "object": "chat.completion", "created": 1, "model": "replay",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine " * 400},
                         "finish_reason": "stop"}], "usage": usage}


@pytest.mark.parametrize("usage", [{"prompt_tokens": 0, "completion_tokens": 0},
                                   {"prompt_tokens": -1_000_000_000, "completion_tokens": -1e9},
                                   {"prompt_tokens": "many", "completion_tokens": 2.5}],
                         ids=["zero", "negative", "not-integers"])
def test_an_upstream_reporting_no_usage_still_runs_the_budget_out(
        usage: dict[str, Any], serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve(faults=[Fault(body=_completion(usage), times=100)])
    with make_relay(server.api_base, tmp_path, LLMBudget(tokens=4_000)) as relay, http_client(relay) as client:
        statuses = [client.post("/v1/chat/completions", json=check_of(4_000)).status_code for _ in range(8)]
    assert statuses[:2] == [200, 200] and set(statuses[3:]) == {403}, statuses
    total = relay.ledger.total
    assert 4_000 <= total.tokens < 7_000, "each call booked about 1,000 prompt + 500 completion tokens"
    assert total.completion_tokens >= 2 * len("fine " * 400) // 4
    call = next(exchanges(tmp_path / "t.jsonl"))
    assert call["usage"]["prompt_tokens"] > 1_000 and "reported_usage" in call, "the transcript shows both"


def test_parallel_requests_cannot_all_pass_the_last_room_in_the_budget(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("check", faults=[Fault(delay_s=0.5, times=100)])  # all eight are in flight together
    start = threading.Barrier(8)
    statuses: list[int] = []
    with make_relay(server.api_base, tmp_path, LLMBudget(tokens=2_500)) as relay:
        def agent() -> None:
            with http_client(relay) as client:
                start.wait()
                statuses.append(client.post("/v1/chat/completions", json=check_of(4_000), timeout=30).status_code)

        threads = [threading.Thread(target=agent) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(statuses) == [200] * 3 + [403] * 5, "three 1,000-token prompts fit under 2,500; five wait in vain"
    assert len(server.requests) == 3
    assert relay.ledger.total.tokens < 2_500 + 1_500, "overshoot of one call at most, as with calls in a row"
    assert relay.ledger.held.calls == 0 and relay.ledger.held.tokens == 0, "every hold was given back"


def test_an_agent_that_hangs_up_mid_answer_is_booked_what_the_upstream_used(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("check")
    body = {"model": "replay", "stream": True, "max_tokens": 100, "system": CHECK["messages"][0]["content"],
            "messages": [CHECK["messages"][1]]}
    with make_relay(server.api_base, tmp_path) as relay:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(relay.socket_path))
            s.sendall(post("/v1/messages", body))
        deadline = time.monotonic() + 10
        while '"exchange"' not in _read(tmp_path / "t.jsonl") and time.monotonic() < deadline:
            time.sleep(0.05)
    [call] = exchanges(tmp_path / "t.jsonl")
    answer = anthropic_message(body, "check-tools", 0, Turn(tool_calls=[RecordedCall(name="add",
                                                                                     arguments={"a": 2, "b": 3})]))
    expected = answer["usage"]["input_tokens"], answer["usage"]["output_tokens"]
    total = relay.ledger.total
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (1, *expected)
    assert "hung up" in call["error"] and "-> add" in call["answer"], "read to its end all the same"


def test_a_stream_without_usage_is_booked_by_counting_its_text(tmp_path: Path) -> None:
    text = "Here is the change. " * 200
    with LyingUpstream(sse_chat(text), "text/event-stream") as upstream, \
            make_relay(upstream.api_base, tmp_path) as relay, http_client(relay) as client:
        r = client.post("/v1/chat/completions", json={**check_of(2_000), "stream": True})
    assert r.status_code == 200 and r.text.endswith("data: [DONE]\n\n"), "the agent got the stream unchanged"
    total = relay.ledger.total
    assert total.completion_tokens >= len(text) // 4 and total.prompt_tokens >= 2_000 // 4
    sent = json.loads(upstream.received[0].body)
    assert sent["stream_options"] == {"include_usage": True}, "an honest upstream is asked to report usage"


@pytest.mark.parametrize("method,path", [("POST", "/v1/batches"), ("POST", "/v1/files"),
                                         ("POST", "/v1/fine_tuning/jobs"), ("POST", "/v1/messages/batches"),
                                         ("POST", "/v1/completions"), ("GET", "/v1/files"),
                                         ("GET", "/v1/batches/batch_1")])
def test_batch_file_and_fine_tuning_endpoints_are_refused(method: str, path: str, tmp_path: Path) -> None:
    with LyingUpstream(json.dumps({"id": "batch_1"}).encode()) as upstream, \
            make_relay(upstream.api_base, tmp_path) as relay, http_client(relay) as client:
        r = client.request(method, path, json={"input_file_id": "file-1", "endpoint": "/v1/chat/completions"}
                           if method == "POST" else None)
        listing = client.get("/v1/models?client_version=1")
    assert r.status_code == 403 and "model calls only" in r.json()["error"]["message"], r.text
    assert [(c.method, c.path) for c in upstream.received] == [("GET", "/v1/models?client_version=1")]
    assert listing.status_code == 200 and relay.ledger.total.calls == 0, "a model listing is free and not a call"


def test_a_model_the_relay_cannot_price_is_refused_unless_it_is_the_configured_one(tmp_path: Path) -> None:
    answer = _completion({"prompt_tokens": 600, "completion_tokens": 500})
    with LyingUpstream(json.dumps(answer).encode()) as upstream, \
            make_relay(upstream.api_base, tmp_path) as relay, http_client(relay) as client:
        unpriced = client.post("/v1/chat/completions", json={**check_of(2_000), "model": "free-for-all-70b"})
        configured = client.post("/v1/chat/completions", json=check_of(2_000))
        priced = client.post("/v1/chat/completions", content=(
            b'{"model": "unpriced-x", "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'))
    assert unpriced.status_code == 403
    message = unpriced.json()["error"]["message"]
    assert "'free-for-all-70b' has none" in message and "--coder-model" in message
    assert configured.status_code == 200 and priced.status_code == 200
    assert [json.loads(c.body)["model"] for c in upstream.received] == ["replay", "gpt-4o-mini"]
    assert upstream.received[1].body.count(b'"model"') == 1, "the upstream gets the model that was checked, once"
    by_model = {c["model"]: c["cost"] for c in exchanges(tmp_path / "t.jsonl")}
    assert by_model["replay"] is None and by_model["gpt-4o-mini"] > 0
    assert relay.ledger.total.dollars == by_model["gpt-4o-mini"] and relay.ledger.total.unpriced_calls == 1

