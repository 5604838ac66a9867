"""The parts of a chat completion the agents use, independent of the provider's response object."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MAX_ARGUMENT_CHARS = 200_000
"""Tool-call arguments longer than this are cut (and the call refused): no tool takes that much."""


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str = Field(description="raw JSON text as the model wrote it (may be malformed)")
    cut: int = Field(0, description="characters cut from arguments over MAX_ARGUMENT_CHARS (the call is refused)")


class ChatReply(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = Field(None, description="dollars; None when litellm has no price for the model")
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = Field(False, description="served from the response cache: no tokens were paid for it")

    def assistant_message(self) -> dict[str, Any]:
        """The reply as the next request must repeat it (OpenAI chat format, which litellm translates)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg
