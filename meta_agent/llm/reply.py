"""The parts of a chat completion the agents use, independent of the provider's response object."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str = Field(description="raw JSON text as the model wrote it (may be malformed)")


class ChatReply(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = Field(None, description="dollars; None when litellm has no price for the model")
    latency_s: float = 0.0
    attempts: int = 1

    def assistant_message(self) -> dict[str, Any]:
        """The reply as the next request must repeat it (OpenAI chat format, which litellm translates)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg
