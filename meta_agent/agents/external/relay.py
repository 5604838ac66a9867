"""The only way out of an external coder's sandbox: an HTTP relay to the one model endpoint configured.

The sandbox has no network. The relay listens on a Unix socket that is mounted into the sandbox,
where `sandbox_launch` turns it into `http://127.0.0.1:PORT` for the agent. On the trusted side it:

- forwards only to the configured upstream (scheme, host, port and path prefix fixed here); any other
  path is refused, so the agent cannot reach another host through it;
- replaces whatever credentials the agent sent with the real key, which never enters the sandbox;
- checks the run's hard budgets before every request and refuses (HTTP 403, which agents do not retry)
  once a budget, the session's request cap or its token cap is used up;
- reads the usage each answer reports (OpenAI chat, OpenAI responses, Anthropic messages; JSON or SSE)
  and books tokens and dollars in the same ledger as the built-in agents;
- writes every exchange, bounded, to the session's transcript.
"""

from __future__ import annotations

import json
import os
import socketserver
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from meta_agent.llm.accounting import Ledger
from meta_agent.llm.budget import LLMBudget
from meta_agent.llm.text import bound

MAX_REQUEST_BYTES = 8_000_000
MAX_RESPONSE_BYTES = 16_000_000
TRANSCRIPT_CHARS = 20_000
HOP_HEADERS = {"host", "connection", "content-length", "transfer-encoding", "keep-alive", "accept-encoding",
               "proxy-authorization", "proxy-connection", "te", "upgrade", "authorization", "x-api-key",
               "api-key", "x-goog-api-key"}
INPUT_KEYS = ("prompt_tokens", "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
OUTPUT_KEYS = ("completion_tokens", "output_tokens")


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


def usage_of(body: bytes) -> tuple[int, int]:
    """(prompt tokens, completion tokens) an answer reports: a JSON body or an SSE stream of them.

    Streams report usage piecewise (Anthropic: input in message_start, the running output total in
    message_delta; OpenAI: one final chunk), so each field keeps its largest value seen."""
    seen: dict[str, int] = {}

    def visit(obj: Any, depth: int = 0) -> None:
        if depth > 4 or not isinstance(obj, dict):
            return
        usage = obj.get("usage")
        if isinstance(usage, dict):
            for k, v in usage.items():
                if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                    seen[k] = max(seen.get(k, 0), v)
        for key in ("message", "response"):
            visit(obj.get(key), depth + 1)

    for event in _events(body):
        visit(event)
    return sum(seen.get(k, 0) for k in INPUT_KEYS), max((seen.get(k, 0) for k in OUTPUT_KEYS), default=0)


def _events(body: bytes) -> list[Any]:
    text = body.decode("utf-8", "replace")
    chunks = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")] or [text]
    out = []
    for chunk in chunks:
        try:
            out.append(json.loads(chunk))
        except (json.JSONDecodeError, RecursionError):
            continue
    return out


def answer_of(body: bytes) -> str:
    """What the model said and called in one answer, readable, from any of the three wire formats
    (JSON or SSE): text first, then `-> tool(arguments)` lines. Empty when nothing is recognised."""
    text: list[str] = []
    calls: dict[str, list[str]] = {}

    def call(key: str, name: str, args: str = "") -> None:
        calls.setdefault(key, [name, ""])[1] += args

    for e in _events(body):
        if not isinstance(e, dict):
            continue
        kind = e.get("type")
        block, delta = e.get("content_block") or {}, e.get("delta") or {}
        if kind == "content_block_start" and block.get("type") == "tool_use":  # Anthropic stream
            call(str(e.get("index")), str(block.get("name")))
        elif kind == "content_block_delta" and isinstance(delta, dict):
            if delta.get("type") == "text_delta":
                text.append(str(delta.get("text", "")))
            elif delta.get("type") == "input_json_delta":
                call(str(e.get("index")), "?", str(delta.get("partial_json", "")))
        elif kind == "response.output_item.done":  # OpenAI responses stream
            item = e.get("item") or {}
            if item.get("type") == "message":
                text += [str(c.get("text", "")) for c in item.get("content", []) if isinstance(c, dict)]
            elif item.get("type") in ("function_call", "custom_tool_call"):
                call(str(item.get("call_id")), str(item.get("name")), str(item.get("arguments") or item.get("input")))
        elif kind == "message" and isinstance(e.get("content"), list):  # Anthropic JSON
            for i, c in enumerate(e["content"]):
                if c.get("type") == "text":
                    text.append(str(c.get("text", "")))
                elif c.get("type") == "tool_use":
                    call(str(i), str(c.get("name")), json.dumps(c.get("input")))
        for choice in e.get("choices") or []:  # OpenAI chat, JSON or stream
            message = choice.get("message") or choice.get("delta") or {}
            if message.get("content"):
                text.append(str(message["content"]))
            for j, tc in enumerate(message.get("tool_calls") or []):
                fn = tc.get("function") or {}
                call(f"c{tc.get('index', j)}", str(fn.get("name") or "?"), str(fn.get("arguments") or ""))
    lines = ["".join(text).strip()] + [f"-> {name}({args})" for name, args in calls.values()]
    return "\n".join(line for line in lines if line)


@dataclass
class RelayStats:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    relay: ModelRelay


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one exchange per connection; a streamed answer ends when it closes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def address_string(self) -> str:
        return "sandbox"

    def do_GET(self) -> None:
        self.server.relay.handle(self)

    def do_POST(self) -> None:
        self.server.relay.handle(self)


class ModelRelay:
    """One coder session's relay; use as a context manager. `socket_dir` is what the sandbox mounts."""

    def __init__(self, upstream: Upstream, *, ledger: Ledger, budget: LLMBudget, agent: str, scope: str | None,
                 transcript: Path, socket_dir: Path, socket_name: str = "relay.sock", model: str | None = None,
                 max_requests: int = 200, max_tokens: int | None = None, timeout_s: float = 600) -> None:
        self.upstream = upstream
        self.ledger, self.budget, self.agent, self.scope = ledger, budget, agent, scope
        self.transcript = transcript
        self.model = model
        self.max_requests, self.max_tokens, self.timeout_s = max_requests, max_tokens, timeout_s
        self.stats = RelayStats()
        self._lock = threading.Lock()
        # `socket_dir` has a short path: a Unix socket's address is limited to about 100 bytes.
        socket_dir.mkdir(parents=True, exist_ok=True)
        self.socket_path = socket_dir / socket_name
        self.socket_path.unlink(missing_ok=True)  # left by a killed run
        self._server = _Server(str(self.socket_path), _Handler)
        self._server.relay = self
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

    def _refusal(self) -> str | None:
        reason = self.budget.reason(self.ledger)
        if reason:
            return reason
        if self.stats.requests >= self.max_requests:
            return f"this coder session's request cap ({self.max_requests}) is used up"
        used = self.stats.prompt_tokens + self.stats.completion_tokens
        if self.max_tokens is not None and used >= self.max_tokens:
            return f"this coder session's token cap ({used:,} of {self.max_tokens:,}) is used up"
        return None

    def _refuse(self, h: _Handler, status: int, message: str) -> None:
        try:  # drain a small unread body: closing on unread data resets the connection before the answer lands
            size = int(h.headers.get("content-length") or 0)
            if 0 < size <= MAX_REQUEST_BYTES and not h.rfile.closed:
                h.rfile.read(size)
        except (ValueError, OSError):
            pass
        self.event({"type": "refused", "path": h.path[:300], "status": status, "reason": message})
        payload = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.end_headers()
        h.wfile.write(payload.encode())

    def handle(self, h: _Handler) -> None:
        path = urlsplit(h.path).path
        prefix = self.upstream.prefix
        twisted = ".." in path.split("/") or "%2e" in path.lower() or "\\" in path
        if twisted or not (path == prefix or path.startswith(prefix + "/")):
            self._refuse(h, 403, f"the relay only forwards to {self.upstream.base}: {h.path[:200]!r} is outside it")
            return
        with self._lock:
            refusal = self._refusal()
            if refusal is None:
                self.stats.requests += 1
        if refusal is not None:
            self._refuse(h, 403, f"meta-agent stopped this request: {refusal}")
            return
        body = self._body(h)
        if body is None:
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP_HEADERS}
        headers["accept-encoding"] = "identity"
        up = self.upstream
        if up.key and up.auth_header == "authorization":
            headers["authorization"] = f"Bearer {up.key}"
        elif up.key and up.auth_header:
            headers[up.auth_header] = up.key
        started = time.monotonic()
        kept = bytearray()
        status = 502
        error = None
        try:
            with httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=10)) as client, \
                    client.stream(h.command, up.origin + h.path, headers=headers, content=body) as r:
                status = r.status_code
                h.send_response(status)
                for k, v in r.headers.items():
                    if k.lower() not in HOP_HEADERS and k.lower() != "content-encoding":
                        h.send_header(k, v)
                h.send_header("connection", "close")
                h.end_headers()
                for chunk in r.iter_bytes():  # decoded: content-encoding is not passed on
                    if len(kept) + len(chunk) > MAX_RESPONSE_BYTES:
                        error = f"answer over {MAX_RESPONSE_BYTES:,} bytes: cut off"
                        break
                    kept += chunk
                    h.wfile.write(chunk)
                    h.wfile.flush()
        except (httpx.HTTPError, OSError) as e:
            error = f"{type(e).__name__}: {e}"
            if status == 502:
                try:
                    h.send_response(502)
                    h.end_headers()
                    h.wfile.write(json.dumps({"error": {"message": f"upstream unreachable: {error}"}}).encode())
                except OSError:
                    pass
        self._account(h, body, bytes(kept), status, time.monotonic() - started, error)

    def _body(self, h: _Handler) -> bytes | None:
        """The request body (Content-Length or chunked), or None after refusing one that is too big or malformed."""
        if "chunked" in (h.headers.get("transfer-encoding") or "").lower():
            body = bytearray()
            while True:
                line = h.rfile.readline(100)
                try:
                    size = int(line.split(b";")[0].strip() or b"x", 16)
                except ValueError:
                    self._refuse(h, 400, "malformed chunked request body")
                    return None
                if size == 0:
                    h.rfile.readline(100)
                    return bytes(body)
                if len(body) + size > MAX_REQUEST_BYTES:
                    self._refuse(h, 413, f"request over the relay's {MAX_REQUEST_BYTES:,}-byte limit")
                    return None
                body += h.rfile.read(size)
                h.rfile.readline(100)
        try:
            size = int(h.headers.get("content-length") or 0)
        except ValueError:
            size = -1
        if not 0 <= size <= MAX_REQUEST_BYTES:
            self._refuse(h, 413, f"request of {size:,} bytes: not within the relay's {MAX_REQUEST_BYTES:,}-byte limit")
            return None
        return h.rfile.read(size) if size else b""

    def _account(self, h: _Handler, body: bytes, answer: bytes, status: int, seconds: float,
                 error: str | None) -> None:
        prompt, completion = usage_of(answer) if status == 200 else (0, 0)
        try:
            request = json.loads(body) if body else {}
        except (ValueError, RecursionError):
            request = {}
        model = str(request.get("model") or self.model or "") if isinstance(request, dict) else (self.model or "")
        cost = price(model, prompt, completion)
        with self._lock:
            self.stats.prompt_tokens += prompt
            self.stats.completion_tokens += completion
            if status == 200:
                self.ledger.record(self.agent, self.scope, prompt, completion, cost)
        self.event({"type": "exchange", "n": self.stats.requests, "method": h.command, "path": h.path[:300],
                     "status": status, "model": model[:200], "seconds": round(seconds, 3),
                     "usage": {"prompt_tokens": prompt, "completion_tokens": completion}, "cost": cost,
                     "error": error, "answer": bound(answer_of(answer), TRANSCRIPT_CHARS),
                     "request": bound(body.decode("utf-8", "replace"), TRANSCRIPT_CHARS),
                     "response": bound(answer.decode("utf-8", "replace"), TRANSCRIPT_CHARS)})


def price(model: str, prompt: int, completion: int) -> float | None:
    """Dollars for one call from litellm's model map; None when the model has no price there."""
    if not model:
        return None
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    try:
        p, c = litellm.cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion)
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
