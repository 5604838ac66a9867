"""The parts of a chat completion the agents use, independent of the provider's response object."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from meta_agent.llm.text import bound, clean_text

MAX_ARGUMENT_CHARS = 200_000
"""Tool-call arguments longer than this are cut (and the call refused): no tool takes that much."""
MAX_REPLY_CHARS = 20_000
"""A reply's text stays in the conversation and is re-sent on every later call: longer text is cut."""
MAX_TOOL_CALLS = 64
"""Tool calls kept of one reply: the loop's step cap would stop the session long before."""
MAX_NAME_CHARS = 200


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
    _cache_key: str | None = PrivateAttr(None)

    @property
    def cache_key(self) -> str | None:
        """The response cache's key of the request this replies to (None without a cache)."""
        return self._cache_key

    @cache_key.setter
    def cache_key(self, key: str | None) -> None:
        self._cache_key = key

    def assistant_message(self) -> dict[str, Any]:
        """The reply as the next request must repeat it (OpenAI chat format, which litellm translates)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg


def bounded(reply: ChatReply) -> ChatReply:
    """`reply` with the bounds every reply gets, whether it came from the provider or from the cache: text
    cleaned of lone surrogates and cut, tool-call arguments cut (and marked, so the call is refused), names
    and ids short, counts not negative."""
    calls = []
    for c in reply.tool_calls[:MAX_TOOL_CALLS]:
        raw = c.arguments
        calls.append(ToolCall(id=clean_text(c.id)[:MAX_NAME_CHARS], name=clean_text(c.name)[:MAX_NAME_CHARS],
                              arguments=clean_text(raw[:MAX_ARGUMENT_CHARS]),
                              cut=max(c.cut, len(raw) - MAX_ARGUMENT_CHARS, 0)))
    finish = reply.finish_reason
    return reply.model_copy(update={
        "content": bound(clean_text(reply.content), MAX_REPLY_CHARS), "tool_calls": calls,
        "finish_reason": clean_text(finish)[:100] if finish is not None else None,
        "prompt_tokens": max(0, reply.prompt_tokens), "completion_tokens": max(0, reply.completion_tokens),
        "cost": reply.cost if reply.cost is None or reply.cost >= 0 else None})
