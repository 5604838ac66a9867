"""A local OpenAI-compatible server that replays recorded conversations: the only stand-in for a model.

The real litellm client talks to it over HTTP (`openai/<name>` with `api_base`). A request is
matched to a recorded conversation by the agent named in its system prompt and, optionally, a
substring of its first user message; the turn is the number of assistant messages already in the
request, so repairs and retries need no server-side bookkeeping. Faults (HTTP errors, delays) are
injected per turn or for every request.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

RAW = "__raw_body__"
"""The key of a fault's verbatim body, on its way from `respond` to the route that sends it."""


class Fault(BaseModel):
    status: int | None = Field(None, description="answer with this HTTP status instead of the turn")
    delay_s: float = Field(0.0, description="sleep first (a model that stops answering: longer than the timeout)")
    times: int = Field(1, description="how many requests this fault answers before the next one applies")
    body: dict[str, Any] | None = Field(None, description="answer 200 with this body: a malformed completion")
    raw: str | None = Field(None, description="answer 200 with this text verbatim: what no JSON encoder writes")


class RecordedCall(BaseModel):
    name: str
    arguments: dict[str, Any] | str = Field(description="a dict is sent as JSON; a string is sent verbatim")


class Turn(BaseModel):
    content: str | None = None
    tool_calls: list[RecordedCall] = Field(default_factory=list)
    expect: str | None = Field(None, description="the request's last message must contain this text")
    faults: list[Fault] = Field(default_factory=list)


class Conversation(BaseModel):
    name: str
    agent: str = Field(description="matched in the system prompt (or, for an external agent with its own system "
                                   "prompt, the first user message): 'You are meta-agent's <agent>'")
    match: str | None = Field(None, description="substring of the first user message")
    turns: list[Turn]
    repeat_last: bool = Field(False, description="serve the last turn forever (an agent that never stops)")


def from_transcript(path: Path, name: str, match: str | None = None) -> Conversation:
    """A recorded conversation from a meta-agent transcript: a session with a real model becomes a fixture."""
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    agent = next(e["agent"] for e in events if e["type"] == "session")
    turns = [Turn(content=e["response"]["content"] or None,
                  tool_calls=[RecordedCall(name=c["name"], arguments=c["arguments"])
                              for c in e["response"]["tool_calls"]])
             for e in events if e["type"] == "call"]
    return Conversation(name=name, agent=agent, match=match, turns=turns)


class Scenario(BaseModel):
    conversations: list[Conversation] = Field(default_factory=list)
    faults: list[Fault] = Field(default_factory=list, description="applied to every request, in order")

    @classmethod
    def load(cls, *paths: Path) -> Scenario:
        merged = cls()
        for p in paths:
            part = cls.model_validate(yaml.safe_load(p.read_text()))
            merged.conversations += part.conversations
            merged.faults += part.faults
        return merged


def _text(value: Any, depth: int = 0) -> str:
    """The text in a message of any of the three APIs: strings, text blocks, tool results, outputs."""
    if depth > 6:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_text(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return " ".join(_text(value[k], depth + 1) for k in ("text", "content", "output") if k in value)
    return ""


@dataclass(frozen=True)
class View:
    """What matching needs from a request, whichever API it came in."""

    system: str
    first_user: str
    last: str
    turn_no: int


def chat_view(body: dict[str, Any]) -> View:
    messages = body.get("messages", [])
    return View(system=next((_text(m) for m in messages if m.get("role") == "system"), ""),
                first_user=next((_text(m) for m in messages if m.get("role") == "user"), ""),
                last=_text(messages[-1]) if messages else "",
                turn_no=sum(1 for m in messages if m.get("role") == "assistant"))


def anthropic_view(body: dict[str, Any]) -> View:
    """Anthropic messages: the system prompt is its own field; tool results come back as user messages."""
    messages = body.get("messages", [])
    return View(system=_text(body.get("system", "")),
                first_user=next((_text(m) for m in messages if m.get("role") == "user"), ""),
                last=_text(messages[-1]) if messages else "",
                turn_no=sum(1 for m in messages if m.get("role") == "assistant"))


def responses_view(body: dict[str, Any]) -> View:
    """OpenAI responses: one `input` list of items. The turn is read from the ids of the calls this server
    made (`call_<conversation>_<turn>_<i>`), echoed back in the input, as a stateless agent resends them."""
    items = body.get("input", [])
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items
    turns = {c.get("call_id", "").rsplit("_", 2)[-2] for c in items
             if c.get("type") == "function_call" and str(c.get("call_id", "")).count("_") >= 3}
    return View(system=_text(body.get("instructions", "")) + " ".join(
                    _text(i) for i in items if i.get("role") in ("system", "developer")),
                first_user=" ".join(_text(i) for i in items if i.get("role") == "user"),
                last=_text(items[-1]) if items else "",
                turn_no=len(turns))


class ReplayState:
    def __init__(self) -> None:
        self.scenario = Scenario()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        """Each request's headers, in order: what credentials reached the server."""
        self.errors: list[str] = []
        self.fault_hits: dict[str, int] = {}
        self.lock = threading.Lock()

    def load(self, scenario: Scenario) -> None:
        with self.lock:
            self.scenario, self.requests, self.errors, self.fault_hits = scenario, [], [], {}
            self.headers = []

    def _fault(self, key: str, faults: list[Fault]) -> Fault | None:
        """The fault that answers this request, counting per key so `times` runs out."""
        seen = self.fault_hits.get(key, 0)
        budget = 0
        for f in faults:
            budget += f.times
            if seen < budget:
                self.fault_hits[key] = seen + 1
                return f
        return None

    def respond(self, body: dict[str, Any], view: View | None = None
                ) -> tuple[int, dict[str, Any] | tuple[Conversation, int], float]:
        """(status, an error / malformed body, or the (conversation, turn) to answer with, delay)."""
        view = view or chat_view(body)
        with self.lock:
            self.requests.append(body)
            system, first_user = view.system, view.first_user
            conv = next((c for c in self.scenario.conversations
                         if f"meta-agent's {c.agent}" in system + first_user
                         and (c.match is None or c.match in first_user)), None)
            fault = self._fault("*", self.scenario.faults)
            if fault is None and conv is None:
                self.errors.append(f"no recorded conversation for system prompt {system[:80]!r} / "
                                   f"first user message {first_user[:80]!r}")
                return 400, {"error": {"message": self.errors[-1], "type": "invalid_request_error"}}, 0.0
            turn_no = view.turn_no
            if fault is None and conv is not None:
                if turn_no >= len(conv.turns) and not conv.repeat_last:
                    self.errors.append(f"{conv.name}: the agent asked for turn {turn_no}, only {len(conv.turns)} "
                                       f"are recorded")
                    return 400, {"error": {"message": self.errors[-1], "type": "invalid_request_error"}}, 0.0
                turn = conv.turns[min(turn_no, len(conv.turns) - 1)]
                fault = self._fault(f"{conv.name}/{turn_no}", turn.faults)
                if fault is None and turn.expect is not None and turn.expect not in view.last:
                    self.errors.append(f"{conv.name} turn {turn_no}: expected {turn.expect!r} in the last message, "
                                       f"got {view.last[:300]!r}")
            if fault is not None and fault.raw is not None:
                return 200, {RAW: fault.raw}, fault.delay_s
            if fault is not None and fault.body is not None:
                return 200, fault.body, fault.delay_s
            if fault is not None:
                if fault.status is None:
                    delay = fault.delay_s
                else:
                    return fault.status, {"error": {"message": f"injected fault {fault.status}",
                                                    "type": "server_error"}}, fault.delay_s
            else:
                delay = 0.0
            assert conv is not None
            return 200, (conv, turn_no), delay

    def completion(self, body: dict[str, Any], conv: Conversation, turn_no: int) -> dict[str, Any]:
        turn = conv.turns[min(turn_no, len(conv.turns) - 1)]
        calls = [{"id": f"call_{conv.name}_{turn_no}_{i}", "type": "function",
                  "function": {"name": c.name,
                               "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)}}
                 for i, c in enumerate(turn.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": turn.content}
        if calls:
            message["tool_calls"] = calls
        prompt_tokens = len(json.dumps(body.get("messages", []))) // 4 + len(json.dumps(body.get("tools", []))) // 4
        completion_tokens = len(json.dumps(message)) // 4
        return {
            "id": f"chatcmpl-{conv.name}-{turn_no}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "replay"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


def make_app(state: ReplayState) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        import asyncio

        state.headers.append(dict(request.headers))
        body = await request.json()
        status, payload, delay = state.respond(body)
        if delay:
            await asyncio.sleep(delay)
        if isinstance(payload, tuple):
            payload = state.completion(body, *payload)
        if RAW in payload:
            return Response(payload[RAW], status_code=status, media_type="application/json")
        # ASCII-escaped JSON, as providers send it: a lone surrogate in a reply stays a valid `\ud800` escape
        return Response(json.dumps(payload), status_code=status, media_type="application/json")

    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        """Anthropic messages, as Claude Code calls them (streamed)."""
        from tests.llm.replay_formats import anthropic_message, anthropic_stream

        state.headers.append(dict(request.headers))
        body = await request.json()
        return await _answer(body, state.respond(body, anthropic_view(body)), anthropic_message, anthropic_stream)

    @app.post("/v1/responses")
    async def responses(request: Request) -> Response:
        """OpenAI responses, as Codex CLI calls them (streamed)."""
        from tests.llm.replay_formats import response_object, response_stream

        state.headers.append(dict(request.headers))
        body = await request.json()
        return await _answer(body, state.respond(body, responses_view(body)), response_object, response_stream)

    async def _answer(body: dict[str, Any], answer: tuple[int, dict[str, Any] | tuple[Conversation, int], float],
                      render: Any, stream: Any) -> Response:
        import asyncio

        status, payload, delay = answer
        if delay:
            await asyncio.sleep(delay)
        if not isinstance(payload, tuple):
            return Response(json.dumps(payload), status_code=status, media_type="application/json")
        conv, turn_no = payload
        reply = render(body, conv.name, turn_no, conv.turns[min(turn_no, len(conv.turns) - 1)])
        if body.get("stream"):
            return Response(stream(reply), media_type="text/event-stream")
        return Response(json.dumps(reply), media_type="application/json")

    return app


class ReplayServer:
    """uvicorn in a background thread on a free port; `load` swaps the scenario between tests."""

    def __init__(self) -> None:
        self.state = ReplayState()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(make_app(self.state), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def origin(self) -> str:
        """The base an Anthropic client wants (it adds /v1/messages itself)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ReplayServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("replay server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def load(self, scenario: Scenario) -> None:
        self.state.load(scenario)

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.state.requests

    @property
    def errors(self) -> list[str]:
        return self.state.errors
