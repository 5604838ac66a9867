"""Transcripts: one JSONL file per agent session in `<run_dir>/transcripts/`, one line per event.

A `call` line holds the request messages added since the previous call (so the file stays linear in
the conversation's length, yet the whole conversation can be rebuilt), the response with its tool
calls, tokens, cost and latency. `tool` lines hold what each tool returned, `note` lines the
decisions the agent loop took (repairs, truncation, budget, give-up), `end` the outcome.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from meta_agent.llm.reply import ChatReply


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


class Transcript:
    """Appends events to one session's file; flushes each line so a killed run keeps what happened."""

    def __init__(self, path: Path, *, agent: str, model: str, meta: dict[str, Any] | None = None) -> None:
        self.path = path
        self.agent = agent
        self.calls = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._write({"type": "session", "agent": agent, "model": model, "meta": meta or {}})

    def _write(self, event: dict[str, Any]) -> None:
        line = json.dumps({"t": _now(), **event}, ensure_ascii=False, default=str) + "\n"
        # A lone surrogate (valid JSON from a provider, invalid Unicode) can only sit inside a JSON string:
        # written as its \uXXXX escape it reads back as the same text, and the file stays valid UTF-8.
        with self.path.open("ab") as f:
            f.write(line.encode("utf-8", "backslashreplace"))

    def call(self, new_messages: list[dict[str, Any]], total_messages: int, tools: list[str], reply: ChatReply,
             model: str) -> None:
        self.calls += 1
        self._write({
            "type": "call", "n": self.calls, "agent": self.agent, "model": model,
            "request": {"messages": new_messages, "messages_total": total_messages, "tools": tools},
            "response": {"content": reply.content, "finish_reason": reply.finish_reason,
                         "tool_calls": [c.model_dump() for c in reply.tool_calls]},
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens},
            "cost": reply.cost, "latency_s": round(reply.latency_s, 3), "attempts": reply.attempts,
            "cached": reply.cached,
        })

    def failed_call(self, error: str, attempts: int) -> None:
        self._write({"type": "call_failed", "agent": self.agent, "error": error, "attempts": attempts})

    def tool(self, call_id: str, name: str, arguments: str, result: str, ok: bool, seconds: float) -> None:
        self._write({"type": "tool", "id": call_id, "name": name, "arguments": arguments, "ok": ok,
                     "seconds": round(seconds, 3), "result": result})

    def note(self, text: str) -> None:
        self._write({"type": "note", "text": text})

    def end(self, ok: bool, outcome: str) -> None:
        self._write({"type": "end", "ok": ok, "outcome": outcome})


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n    [... {len(text) - limit} more characters; --full shows all]"


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def render(path: Path, limit: int | None = 600) -> str:
    """A transcript as a readable agent session (what was asked, said, called and returned)."""
    out: list[str] = []
    for e in read_events(path):
        kind = e["type"]
        if kind == "session":
            meta = " · ".join(f"{k}={v}" for k, v in e.get("meta", {}).items())
            out.append(f"=== {e['agent']} session · {e['model']} · {e['t']}" + (f"\n    {meta}" if meta else ""))
        elif kind == "call":
            for m in e["request"]["messages"]:
                if m.get("role") in ("system", "user"):
                    out.append(f"[{m['role']}]\n{_indent(_clip(str(m.get('content') or ''), limit))}")
            cost = "cached, nothing paid" if e.get("cached") else \
                "cost unknown" if e.get("cost") is None else f"${e['cost']:.4f}"
            retried = f" · {e['attempts']} attempts" if e.get("attempts", 1) > 1 else ""
            u = e["usage"]
            out.append(f"--- call {e['n']} · {u['prompt_tokens']:,} + {u['completion_tokens']:,} tokens · {cost} · "
                       f"{e['latency_s']:.2f} s{retried}")
            r = e["response"]
            if r.get("content"):
                out.append(f"[assistant]\n{_indent(_clip(r['content'], limit))}")
            for c in r.get("tool_calls", []):
                out.append(f"  -> {c['name']}({_clip(c['arguments'], limit)})")
        elif kind == "call_failed":
            out.append(f"--- call failed after {e['attempts']} attempts: {e['error']}")
        elif kind == "tool":
            status = "ok" if e["ok"] else "error"
            result = _indent(_clip(e["result"], limit), "     ")
            out.append(f"  <- {e['name']} {status} ({e['seconds']:.2f} s)\n{result}")
        elif kind == "exchange":  # an external coder's request, as its relay forwarded it (raw wire format)
            u = e["usage"]
            cost = "cost unknown" if e.get("cost") is None else f"${e['cost']:.4f}"
            error = f" · {e['error']}" if e.get("error") else ""
            out.append(f"--- {e['method']} {e['path']} · HTTP {e['status']} · {u['prompt_tokens']:,} + "
                       f"{u['completion_tokens']:,} tokens · {cost} · {e['seconds']:.2f} s{error}")
            answer = e.get("answer") or e.get("response") or ""
            out.append(f"[assistant]\n{_indent(_clip(answer, limit))}")
        elif kind == "refused":
            out.append(f"--- refused {e['path']} (HTTP {e['status']}): {e['reason']}")
        elif kind == "note":
            out.append(f"  ** {e['text']}")
        elif kind == "end":
            out.append(f"=== end: {'ok' if e['ok'] else 'failed'}: {e['outcome']}")
    return "\n".join(out) + "\n"
