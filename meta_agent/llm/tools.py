"""Tools an agent may call: a name, a pydantic model of the arguments, and the function that runs it.

The JSON schema sent to the model is the argument model's schema with `$ref`s inlined, because
not every provider resolves references inside tool parameters.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from meta_agent.llm.text import clean_text


@dataclass
class ToolResult:
    text: str
    """What the model reads back."""
    ok: bool = True
    done: bool = False
    """Ends the agent loop (submit, commit, give up)."""
    value: Any = None
    """What the loop hands to its caller when `done`."""


@dataclass
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[Any], ToolResult]

    def schema(self) -> dict[str, Any]:
        params = inline_refs(self.args.model_json_schema())
        params.pop("title", None)
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": params}}


class BadToolCall(ValueError):
    """The model's tool call cannot be run as written (unknown tool, not JSON, wrong arguments)."""


MAX_DEPTH = 32
"""Nesting a tool's arguments may have: tools take a few fields, never deep data."""


class _TooDeep(Exception):
    pass


def _cleaned(value: Any, depth: int) -> Any:
    """`value` with lone surrogates replaced in every string (they break every UTF-8 writer downstream)."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): _cleaned(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_cleaned(v, depth + 1) for v in value]
    return value


def parse_arguments(tool: Tool, raw: str) -> BaseModel:
    """The arguments as the tool's model, or BadToolCall saying what is wrong: whatever the model wrote (nesting
    past the parser's depth, integers past Python's digit limit, lone surrogates) is a bad call, never a crash."""
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError as e:
        raise BadToolCall(f"arguments of {tool.name} are not valid JSON ({e.msg}, position {e.pos})") from None
    except RecursionError:
        raise BadToolCall(f"arguments of {tool.name} nest too deeply to parse") from None
    except ValueError as e:  # e.g. an integer of thousands of digits
        raise BadToolCall(f"arguments of {tool.name} cannot be read: {str(e)[:200]}") from None
    if not isinstance(data, dict):
        raise BadToolCall(f"arguments of {tool.name} must be a JSON object, got {type(data).__name__}")
    try:
        data = _cleaned(data, 0)
    except _TooDeep:
        raise BadToolCall(f"arguments of {tool.name} nest deeper than {MAX_DEPTH} levels; no tool takes that") from None
    try:
        return tool.args.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {str(err['msg'])[:300]}"
                             for err in e.errors()[:6])
        raise BadToolCall(f"arguments of {tool.name} are invalid: {problems}") from None
    except (RecursionError, ValueError) as e:
        raise BadToolCall(f"arguments of {tool.name} cannot be read: {str(e)[:200]}") from None


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = defs[node["$ref"].split("/")[-1]]
                return walk({**target, **{k: v for k, v in node.items() if k != "$ref"}})
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: dict[str, Any] = walk(schema)
    return out
