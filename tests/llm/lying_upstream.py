"""A model endpoint that answers every request with one canned answer, whatever was asked, and keeps the raw
requests: an upstream whose usage report lies or is missing, and a witness of what reached it."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    body: bytes


def sse_chat(text: str, pieces: int = 40) -> bytes:
    """An OpenAI chat stream of `text` in `pieces` deltas and no usage chunk (what `stream_options` omitted gives)."""
    step = -(-len(text) // pieces)
    chunks = [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text[i:i + step]}}]}
              for i in range(0, len(text), step)]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


class LyingUpstream:
    """ThreadingHTTPServer on a free port; `answer` and `content_type` are what every request gets."""

    def __init__(self, answer: bytes, content_type: str = "application/json") -> None:
        self.answer, self.content_type = answer, content_type
        self.received: list[Received] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                upstream.received.append(Received(self.command, self.path, body))
                self.send_response(200)
                self.send_header("content-type", upstream.content_type)
                self.send_header("content-length", str(len(upstream.answer)))
                self.end_headers()
                self.wfile.write(upstream.answer)

            do_GET = do_POST = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> LyingUpstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
