"""A recorded turn in the two other wire formats coding agents speak: Anthropic messages (Claude Code)
and OpenAI responses (Codex CLI), as one JSON body or as the SSE stream those agents ask for."""

from __future__ import annotations

import json
from typing import Any

from tests.llm.replay_server import Turn


def _tokens(value: Any) -> int:
    return len(json.dumps(value)) // 4


def _arguments(arguments: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            return {"raw": arguments}
        return parsed if isinstance(parsed, dict) else {"raw": arguments}
    return arguments


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def anthropic_message(body: dict[str, Any], name: str, turn_no: int, turn: Turn) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.content}] if turn.content else []
    blocks += [{"type": "tool_use", "id": f"toolu_{name}_{turn_no}_{i}", "name": c.name,
                "input": _arguments(c.arguments)} for i, c in enumerate(turn.tool_calls)]
    return {"id": f"msg_{name}_{turn_no}", "type": "message", "role": "assistant", "model": body.get("model", ""),
            "content": blocks, "stop_reason": "tool_use" if turn.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": _tokens(body.get("messages", [])) + _tokens(body.get("system", "")),
                      "output_tokens": _tokens(blocks)}}


def anthropic_stream(message: dict[str, Any]) -> str:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}}
    out = [sse("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        first: dict[str, Any]
        if block["type"] == "text":
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                                        "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return "".join(out)


def response_object(body: dict[str, Any], name: str, turn_no: int, turn: Turn) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    if turn.content:
        items.append({"type": "message", "role": "assistant", "id": f"msg_{name}_{turn_no}", "status": "completed",
                      "content": [{"type": "output_text", "text": turn.content, "annotations": []}]})
    items += [{"type": "function_call", "id": f"fc_{name}_{turn_no}_{i}", "call_id": f"call_{name}_{turn_no}_{i}",
               "name": c.name, "status": "completed",
               "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)}
              for i, c in enumerate(turn.tool_calls)]
    prompt, completion = _tokens(body.get("input", [])) + _tokens(body.get("instructions", "")), _tokens(items)
    return {"id": f"resp_{name}_{turn_no}", "object": "response", "status": "completed",
            "model": body.get("model", ""), "output": items,
            "usage": {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


def response_stream(response: dict[str, Any]) -> str:
    out = [sse("response.created", {"type": "response.created",
                                    "response": {**response, "status": "in_progress", "output": []}})]
    for i, item in enumerate(response["output"]):
        out.append(sse("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                      "item": item}))
        out.append(sse("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                     "item": item}))
    out.append(sse("response.completed", {"type": "response.completed", "response": response}))
    return "".join(out)
