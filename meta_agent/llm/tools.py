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


def parse_arguments(tool: Tool, raw: str) -> BaseModel:
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError as e:
        raise BadToolCall(f"arguments of {tool.name} are not valid JSON ({e.msg}, position {e.pos})") from None
    if not isinstance(data, dict):
        raise BadToolCall(f"arguments of {tool.name} must be a JSON object, got {type(data).__name__}")
    try:
        return tool.args.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                             for err in e.errors()[:6])
        raise BadToolCall(f"arguments of {tool.name} are invalid: {problems}") from None


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
