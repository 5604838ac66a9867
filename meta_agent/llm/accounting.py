"""Token and dollar accounting per agent and per run, kept in the run dir so a resumed run keeps counting.

A provider's usage report is a claim, not a bill: `believable` books the local estimate (about four
characters per token, `meta_agent.tokens`) whenever the report is missing, not a count, or cannot be
true for what was sent and received. The ledger takes only counts that are whole, finite and not
negative, so no single report, and no file written before these checks, can drive it below zero.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from meta_agent.errors import UserError
from meta_agent.fsutil import atomic_write_text
from meta_agent.tokens import CHARS_PER_TOKEN

USAGE_FILE = "llm-usage.json"
MAX_CALL_TOKENS = 10_000_000
"""Several times any model's context window: a report above it is a fault or a lie, never a bill."""
UNDERCOUNT_RATIO = 4
"""A report under a quarter of the local estimate is not believed. Honest counts stay within about 2x of
four characters per token (code, JSON, other scripts); only long runs of one character, or images sent
as base64, fall further below, and booking the estimate for those over-counts, which is the safe side."""


class LedgerError(UserError, ValueError):
    """The usage file of a run cannot be trusted (damaged, or holding impossible counts)."""


def text_tokens(text: str | bytes) -> int:
    """Tokens in `text` by the local estimate; 0 only for empty text."""
    return -(-len(text) // CHARS_PER_TOKEN)


def believable(reported: object, estimate: int) -> int:
    """Tokens to book for one side of a call (prompt or completion): the provider's count, unless it is
    missing, not an integer, negative, over `MAX_CALL_TOKENS`, zero while text went through, or under
    1/`UNDERCOUNT_RATIO` of the local `estimate`; then the estimate."""
    if not isinstance(reported, int) or isinstance(reported, bool):
        return estimate
    if reported < 0 or reported > MAX_CALL_TOKENS or reported * UNDERCOUNT_RATIO < estimate:
        return estimate
    return reported


class Usage(BaseModel):
    """Paid calls and tokens (what budgets count), and beside them what the response cache served for free."""

    calls: int = Field(0, ge=0)
    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    dollars: float = Field(0.0, ge=0, allow_inf_nan=False)
    unpriced_calls: int = Field(0, ge=0, description="calls whose model has no price in litellm's map (counted "
                                                     "as $0)")
    cached_calls: int = Field(0, ge=0, description="replies served from the response cache (nothing paid)")
    cached_tokens: int = Field(0, ge=0, description="prompt + completion tokens those replies cost when first "
                                                    "paid for")

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


@dataclass
class InFlight:
    """Room held for calls sent but not yet booked, so that parallel callers see each other."""

    calls: int = 0
    tokens: int = 0
    dollars: float = 0.0


class Ledger:
    """Running totals; written after every call (one small JSON file, atomically). Safe to share between threads:
    `lock` guards the totals and the room held for calls in flight."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.state = LedgerState()
        self.held = InFlight()
        self.lock = threading.RLock()
        if path is not None and path.is_file():
            self.state = _load(path)

    @property
    def total(self) -> Usage:
        return self.state.total

    def record(self, agent: str, scope: str | None, prompt_tokens: int, completion_tokens: int,
               cost: float | None, cached: bool = False) -> None:
        """Book one call; refuses counts that no call can have (the caller must pass `believable` ones)."""
        bad_cost = cost is not None and not (math.isfinite(cost) and cost >= 0)
        if min(prompt_tokens, completion_tokens) < 0 or bad_cost:
            raise ValueError(f"{agent}: cannot book {prompt_tokens} prompt + {completion_tokens} completion tokens "
                             f"for ${cost}: counts and dollars must be finite and not negative")
        with self.lock:
            buckets = [self.state.total, self.state.by_agent.setdefault(agent, Usage())]
            if scope:
                buckets.append(self.state.by_scope.setdefault(scope, Usage()))
            for u in buckets:
                u.add(prompt_tokens, completion_tokens, cost, cached)
            if self.path is not None:
                atomic_write_text(self.path, self.state.model_dump_json(indent=2))

    def hold(self, tokens: int, dollars: float) -> None:
        with self.lock:
            self.held.calls += 1
            self.held.tokens += tokens
            self.held.dollars += dollars

    def release(self, tokens: int, dollars: float) -> None:
        with self.lock:
            self.held.calls -= 1
            self.held.tokens -= tokens
            self.held.dollars = max(0.0, self.held.dollars - dollars)


def _load(path: Path) -> LedgerState:
    try:
        return LedgerState.model_validate(json.loads(path.read_text()))
    except (ValueError, RecursionError) as e:  # ValidationError and JSONDecodeError are ValueErrors
        first = e.errors()[0] if isinstance(e, ValidationError) else None
        what = (f"{'.'.join(map(str, first['loc']))} = {first['input']!r:.100}: {first['msg']}" if first
                else f"not valid JSON ({e})")
        raise LedgerError(
            f"{path}: {what}. The run's LLM usage is unknown (a provider's false usage report, written before "
            f"meta-agent checked reports, or a damaged file); the transcripts in the run's transcripts/ folder "
            f"hold each call's usage: correct the file from them, or delete it to count from zero") from e
