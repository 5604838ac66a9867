"""Token and dollar accounting per agent and per run, kept in the run dir so a resumed run keeps counting."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from meta_agent.fsutil import atomic_write_text

USAGE_FILE = "llm-usage.json"


class Usage(BaseModel):
    """Paid calls and tokens (what budgets count), and beside them what the response cache served for free."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    dollars: float = 0.0
    unpriced_calls: int = Field(0, description="calls whose model has no price in litellm's map (counted as $0)")
    cached_calls: int = Field(0, description="replies served from the response cache (nothing paid)")
    cached_tokens: int = Field(0, description="prompt + completion tokens those replies cost when first paid for")

    @property
    def tokens(self) -> int:
        """Paid tokens: what the token budget counts."""
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt_tokens: int, completion_tokens: int, cost: float | None, cached: bool = False) -> None:
        if cached:
            self.cached_calls += 1
            self.cached_tokens += prompt_tokens + completion_tokens
            return
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.dollars += cost


class LedgerState(BaseModel):
    total: Usage = Field(default_factory=Usage)
    by_agent: dict[str, Usage] = Field(default_factory=dict)
    by_scope: dict[str, Usage] = Field(default_factory=dict, description="e.g. per generation: g0, g1")


class Ledger:
    """Running totals; written after every call (one small JSON file, atomically)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.state = LedgerState()
        if path is not None and path.is_file():
            self.state = LedgerState.model_validate(json.loads(path.read_text()))

    @property
    def total(self) -> Usage:
        return self.state.total

    def record(self, agent: str, scope: str | None, prompt_tokens: int, completion_tokens: int,
               cost: float | None, cached: bool = False) -> None:
        buckets = [self.state.total, self.state.by_agent.setdefault(agent, Usage())]
        if scope:
            buckets.append(self.state.by_scope.setdefault(scope, Usage()))
        for u in buckets:
            u.add(prompt_tokens, completion_tokens, cost, cached)
        if self.path is not None:
            atomic_write_text(self.path, self.state.model_dump_json(indent=2))
