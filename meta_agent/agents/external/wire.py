"""What an answer says in the three wire formats external coders speak (OpenAI chat, OpenAI responses,
Anthropic messages), as one JSON body or as an SSE stream: the usage it reports and the text it carries."""

from __future__ import annotations

import json
from typing import Any

INPUT_KEYS = ("prompt_tokens", "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
OUTPUT_KEYS = ("completion_tokens", "output_tokens")


def usage_of(body: bytes) -> tuple[int | None, int | None]:
    """(prompt tokens, completion tokens) an answer reports; None for a side it reports nothing usable for
    (missing, negative, or not an integer).

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
    inputs = [seen[k] for k in INPUT_KEYS if k in seen]
    outputs = [seen[k] for k in OUTPUT_KEYS if k in seen]
    return (sum(inputs) if inputs else None), (max(outputs) if outputs else None)


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
    (JSON or SSE): text first, then `-> tool(arguments)` lines. Empty when nothing is recognised; whatever
    shape the answer has (the relay also counts this text when the usage report cannot be believed)."""
    text: list[str] = []
    calls: dict[str, list[str]] = {}

    def call(key: str, name: str, args: str = "") -> None:
        calls.setdefault(key, [name, ""])[1] += args

    def output_items(items: object) -> None:  # OpenAI responses, one item of a stream or a whole answer
        for item in _dicts(items):
            if item.get("type") == "message":
                text.extend(str(c.get("text", "")) for c in _dicts(item.get("content")))
            elif item.get("type") in ("function_call", "custom_tool_call"):
                call(str(item.get("call_id")), str(item.get("name")), str(item.get("arguments") or item.get("input")))

    for e in _dicts(_events(body)):
        kind = e.get("type")
        block, delta = _dict(e.get("content_block")), _dict(e.get("delta"))
        if kind == "content_block_start" and block.get("type") == "tool_use":  # Anthropic stream
            call(str(e.get("index")), str(block.get("name")))
        elif kind == "content_block_delta":
            if delta.get("type") == "text_delta":
                text.append(str(delta.get("text", "")))
            elif delta.get("type") == "input_json_delta":
                call(str(e.get("index")), "?", str(delta.get("partial_json", "")))
        elif kind == "response.output_item.done":  # OpenAI responses stream
            output_items([e.get("item")])
        elif e.get("object") == "response":  # OpenAI responses JSON
            output_items(e.get("output"))
        elif kind == "message":  # Anthropic JSON
            for i, c in enumerate(_dicts(e.get("content"))):
                if c.get("type") == "text":
                    text.append(str(c.get("text", "")))
                elif c.get("type") == "tool_use":
                    call(str(i), str(c.get("name")), json.dumps(c.get("input")))
        for choice in _dicts(e.get("choices")):  # OpenAI chat, JSON or stream
            message = _dict(choice.get("message") or choice.get("delta"))
            if message.get("content"):
                text.append(str(message["content"]))
            for j, tc in enumerate(_dicts(message.get("tool_calls"))):
                fn = _dict(tc.get("function"))
                call(f"c{tc.get('index', j)}", str(fn.get("name") or "?"), str(fn.get("arguments") or ""))
    lines = ["".join(text).strip()] + [f"-> {name}({args})" for name, args in calls.values()]
    return "\n".join(line for line in lines if line)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
