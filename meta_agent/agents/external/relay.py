"""The only way out of an external coder's sandbox: an HTTP relay to the one model endpoint configured.

The sandbox has no network. The relay listens on a Unix socket that is mounted into the sandbox,
where `sandbox_launch` turns it into `http://127.0.0.1:PORT` for the agent. On the trusted side it:

- forwards only model calls (POST chat/completions, responses, messages; GET models) under the configured
  upstream (scheme, host, port and path prefix fixed here); batch, file, fine-tuning and any other path is
  refused, as is a model other than the configured one that litellm has no price for;
- replaces whatever credentials the agent sent with the real key, which never enters the sandbox;
- holds each model call's estimated prompt against the run's hard budgets and the session's caps before
  it goes out, so parallel calls see each other, and refuses (HTTP 403, which agents do not retry) once a
  budget, the session's request cap or its token cap is used up;
- reads the whole answer even when the agent hangs up, and books the usage it reports (OpenAI chat, OpenAI
  responses, Anthropic messages; JSON or SSE) in the same ledger as the built-in agents, or the local
  estimate when the report is missing or cannot be true (`accounting.believable`);
- writes every exchange, bounded, to the session's transcript.

Connections, idle time and request sizes are bounded in `relay_http`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from meta_agent.agents.external.relay_http import (
    IDLE_TIMEOUT_S,
    MAX_CONNECTIONS,
    ClientSink,
    Refused,
    RelayHandler,
    RelayServer,
    error_body,
    read_body,
)
from meta_agent.agents.external.wire import answer_of, usage_of
from meta_agent.llm.accounting import Ledger, believable, text_tokens
from meta_agent.llm.budget import LLMBudget
from meta_agent.llm.errors import BudgetExceeded
from meta_agent.llm.text import bound

MAX_RESPONSE_BYTES = 16_000_000
TRANSCRIPT_CHARS = 20_000
HOP_HEADERS = {"host", "connection", "content-length", "transfer-encoding", "keep-alive", "accept-encoding",
               "proxy-authorization", "proxy-connection", "te", "upgrade", "authorization", "x-api-key",
               "api-key", "x-goog-api-key"}
MODEL_CALLS = ("/chat/completions", "/responses", "/messages")
"""POST endpoints, under the base (with or without a /v1 of the client's own): the calls that are metered."""


@dataclass(frozen=True)
class Upstream:
    """Where the relay may send requests, and the credential it adds."""

    base: str
    """e.g. https://api.anthropic.com, or http://localhost:8000/v1; requests must stay under its path."""
    auth_header: str | None = None
    """`authorization` (sent as `Bearer KEY`) or `x-api-key`; None sends no credential (a local server)."""
    key: str | None = None

    @property
    def prefix(self) -> str:
        return urlsplit(self.base).path.rstrip("/")

    @property
    def origin(self) -> str:
        parts = urlsplit(self.base)
        return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class Call:
    """One request the relay admitted: what goes upstream, and what it is expected to cost."""

    method: str
    target: str
    """Path and query, as the agent sent them."""
    body: bytes
    """What goes upstream: a model call's JSON re-encoded from what was checked, so that the upstream cannot read
    another model from a duplicate key."""
    model: str = ""
    """The model a model call names; "" for a model listing, which is not metered."""
    priced_as: str = ""
    """The name litellm prices this call by: the configured model's full name when the agent named it."""
    prompt_tokens: int = 0
    """The local estimate of the prompt, held against the budgets while the call is in flight."""


@dataclass
class RelayStats:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ModelRelay:
    """One coder session's relay; use as a context manager. `socket_dir` is what the sandbox mounts."""

    def __init__(self, upstream: Upstream, *, ledger: Ledger, budget: LLMBudget, agent: str, scope: str | None,
                 transcript: Path, socket_dir: Path, socket_name: str = "relay.sock", model: str | None = None,
                 max_requests: int = 200, max_tokens: int | None = None, timeout_s: float = 600,
                 max_connections: int = MAX_CONNECTIONS, idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        self.upstream = upstream
        self.ledger, self.budget, self.agent, self.scope = ledger, budget, agent, scope
        self.transcript = transcript
        self.model = model
        self.max_requests, self.max_tokens, self.timeout_s = max_requests, max_tokens, timeout_s
        self.stats = RelayStats()
        self._held = 0
        self._lock = threading.Lock()
        _litellm()  # its import takes seconds: now, not inside the first request, where an agent's client times out
        # `socket_dir` has a short path: a Unix socket's address is limited to about 100 bytes.
        socket_dir.mkdir(parents=True, exist_ok=True)
        self.socket_path = socket_dir / socket_name
        self.socket_path.unlink(missing_ok=True)  # left by a killed run
        self._server = RelayServer(str(self.socket_path), self.handle, max_connections=max_connections,
                                   idle_timeout_s=idle_timeout_s)
        self.socket_path.chmod(0o777)  # the sandbox may run as another user
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-relay", daemon=True)
        transcript.parent.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> ModelRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.socket_path.unlink(missing_ok=True)

    def event(self, event: dict[str, Any]) -> None:
        line = json.dumps({"t": time.strftime("%Y-%m-%dT%H:%M:%S"), **event}, ensure_ascii=False, default=str)
        with self._lock, self.transcript.open("ab") as f:
            f.write((line + "\n").encode("utf-8", "backslashreplace"))

    def handle(self, h: RelayHandler) -> None:
        try:
            call = self._admit(h)
            with self._metered(call):
                started = time.monotonic()
                status, answer, error = self._forward(h, call)
                self._account(call, status, answer, time.monotonic() - started, error)
        except Refused as r:
            self.event({"type": "refused", "path": h.path[:300], "status": r.status, "reason": r.message})
            sink = ClientSink(h)
            sink.head(r.status, [("content-type", "application/json")])
            sink.write(error_body(r.message))
            sink.linger()

    def _admit(self, h: RelayHandler) -> Call:
        """The request as it will go upstream; Refused when it is outside the base, not a model call, malformed,
        or names a model whose spend could not be counted."""
        path = urlsplit(h.path).path
        prefix = self.upstream.prefix
        twisted = ".." in path.split("/") or "%2e" in path.lower() or "\\" in path
        if twisted or not (path == prefix or path.startswith(prefix + "/")):
            raise Refused(403, f"the relay only forwards to {self.upstream.base}: {h.path[:200]!r} is outside it")
        rest = path[len(prefix):]
        endpoint = rest[3:] if rest.startswith("/v1/") else rest
        listing = h.command == "GET" and endpoint == "/models"  # Codex lists models on start; that costs nothing
        if not listing and (h.command != "POST" or endpoint not in MODEL_CALLS):
            raise Refused(403, f"the relay forwards model calls only (POST chat/completions, responses or messages; "
                               f"GET models): {h.command} {h.path[:200]!r} is refused, since batch, file and "
                               f"fine-tuning calls would spend outside the run's budgets")
        body = read_body(h)
        if listing:
            return Call(h.command, h.path, b"")
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):
            request = None
        model = request.get("model") if isinstance(request, dict) else None
        if not isinstance(request, dict) or not isinstance(model, str) or not model:
            raise Refused(400, f"{h.command} {h.path[:200]!r}: the body is not a JSON object naming a model; the relay "
                               f"forwards only model calls it can meter")
        configured = self.model is not None and model in (self.model, self.model.partition("/")[2])
        if not configured and price(model, 1, 1) is None:
            raise Refused(403, f"the relay serves the configured model ({self.model or 'none'}) and models litellm has "
                               f"a price for; {model[:200]!r} has none, so its spend could not be counted against the "
                               f"run's budgets: use the configured model, or configure this one with --coder-model")
        if endpoint == "/chat/completions" and request.get("stream") is True:
            # without it, OpenAI streams report no usage, and hidden reasoning tokens could not be counted
            options = request.get("stream_options")
            request["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        # A lone surrogate (legal as a JSON escape) is written back as that escape, still valid JSON.
        forwarded = json.dumps(request, ensure_ascii=False).encode("utf-8", "backslashreplace")
        return Call(h.command, h.path, forwarded, model=model,
                    priced_as=self.model if configured and self.model else model, prompt_tokens=text_tokens(body))

    @contextmanager
    def _metered(self, call: Call) -> Iterator[None]:
        """Hold the call's estimated prompt against the session's caps and the run's budgets while it is in flight;
        Refused when one is used up. The call must be booked before the block ends."""
        dollars = price(call.priced_as, call.prompt_tokens, 0) or 0.0
        with ExitStack() as held:
            with self._lock:
                refusal = self._session_refusal()
                if refusal is None:
                    try:
                        held.enter_context(self.budget.reserve(self.ledger, call.prompt_tokens, dollars))
                    except BudgetExceeded as e:
                        refusal = str(e)
                if refusal is not None:
                    raise Refused(403, f"meta-agent stopped this request: {refusal}")
                self.stats.requests += 1
                self._held += call.prompt_tokens
            try:
                yield
            finally:
                with self._lock:
                    self._held -= call.prompt_tokens

    def _session_refusal(self) -> str | None:
        if self.stats.requests >= self.max_requests:
            return f"this coder session's request cap ({self.max_requests}) is used up"
        used = self.stats.prompt_tokens + self.stats.completion_tokens + self._held
        if self.max_tokens is not None and used >= self.max_tokens:
            return f"this coder session's token cap ({used:,} of {self.max_tokens:,}) is used up"
        return None

    def _forward(self, h: RelayHandler, call: Call) -> tuple[int, bytes, str | None]:
        """(status, the answer as far as it was read, what went wrong): the answer is read to its end whether
        or not the agent is still there, since the model is paid for either way."""
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP_HEADERS}
        headers["accept-encoding"] = "identity"
        up = self.upstream
        if up.key and up.auth_header == "authorization":
            headers["authorization"] = f"Bearer {up.key}"
        elif up.key and up.auth_header:
            headers[up.auth_header] = up.key
        sink = ClientSink(h)
        kept = bytearray()
        status, error = 502, None
        try:
            with httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=10)) as client, \
                    client.stream(call.method, up.origin + call.target, headers=headers, content=call.body) as r:
                status = r.status_code
                sink.head(status, [(k, v) for k, v in r.headers.items()
                                   if k.lower() not in HOP_HEADERS and k.lower() != "content-encoding"])
                for chunk in r.iter_bytes():  # decoded: content-encoding is not passed on
                    if len(kept) + len(chunk) > MAX_RESPONSE_BYTES:
                        error = f"answer over {MAX_RESPONSE_BYTES:,} bytes: cut off"
                        break
                    kept += chunk
                    sink.write(chunk)
        except (httpx.HTTPError, OSError) as e:
            error = f"{type(e).__name__}: {e}"
            if status == 502:
                sink.head(502, [("content-type", "application/json")])
                sink.write(error_body(f"upstream unreachable: {error}", kind="api_error"))
        if sink.gone:
            error = (error + "; " if error else "") + "the agent hung up before the answer ended (booked in full)"
        return status, bytes(kept), error

    def _account(self, call: Call, status: int, answer: bytes, seconds: float, error: str | None) -> None:
        said = answer_of(answer)
        prompt = completion = 0
        record: dict[str, Any] = {"cost": None}
        if call.model and status == 200:  # a model call answered: paid for, whoever read the answer
            reported = usage_of(answer)
            prompt, completion = believable(reported[0], call.prompt_tokens), believable(reported[1], text_tokens(said))
            if (prompt, completion) != reported:  # booked the local estimate: keep what the upstream claimed
                record["reported_usage"] = {"prompt_tokens": reported[0], "completion_tokens": reported[1]}
            record["cost"] = price(call.priced_as, prompt, completion)
            self.ledger.record(self.agent, self.scope, prompt, completion, record["cost"])
        with self._lock:
            self.stats.prompt_tokens += prompt
            self.stats.completion_tokens += completion
        self.event({"type": "exchange", "n": self.stats.requests, "method": call.method, "path": call.target[:300],
                    "status": status, "model": call.model[:200], "seconds": round(seconds, 3),
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion}, **record, "error": error,
                    "answer": bound(said, TRANSCRIPT_CHARS),
                    "request": bound(call.body.decode("utf-8", "replace"), TRANSCRIPT_CHARS),
                    "response": bound(answer.decode("utf-8", "replace"), TRANSCRIPT_CHARS)})


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


def price(model: str, prompt: int, completion: int) -> float | None:
    """Dollars for one call from litellm's model map; None when the model has no price there."""
    if not model:
        return None
    try:
        p, c = _litellm().cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion)
    except Exception:
        return None
    return float(p) + float(c)


def exchanges(transcript: Path) -> Iterator[dict[str, Any]]:
    """The relay's records in a transcript (requests forwarded, with status and usage)."""
    for line in transcript.read_text(encoding="utf-8").splitlines():
        if line.strip():
            event = json.loads(line)
            if event.get("type") == "exchange":
                yield event
