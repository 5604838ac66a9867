"""Hard LLM budgets (tokens, dollars) for a whole run: checked before every call, never after the money is gone.

Calls in flight hold room in the ledger (`reserve`) until they are booked, so that parallel calls each see
the others: a check made before and booked after would let N parallel calls through the last bit of room.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from meta_agent.llm.accounting import Ledger
from meta_agent.llm.errors import BudgetExceeded


@dataclass(frozen=True)
class LLMBudget:
    tokens: int | None = None
    dollars: float | None = None

    def reason(self, ledger: Ledger) -> str | None:
        """None while there is room; otherwise a sentence saying which budget is used up (booked calls plus
        the room held by calls in flight)."""
        with ledger.lock:
            used, held = ledger.total, ledger.held
            if self.tokens is not None and used.tokens + held.tokens >= self.tokens:
                more = f"; {held.calls} calls in flight hold {held.tokens:,} more" if held.calls else ""
                return (f"LLM token budget used up ({used.tokens:,} of {self.tokens:,} tokens in {used.calls} "
                        f"calls{more})")
            if self.dollars is not None and used.dollars + held.dollars >= self.dollars:
                more = f"; {held.calls} calls in flight hold ${held.dollars:.4f} more" if held.calls else ""
                return (f"LLM dollar budget used up (${used.dollars:.4f} of ${self.dollars:.2f} in {used.calls} "
                        f"calls{more})")
            return None

    def ensure_room(self, ledger: Ledger, prompt_tokens: int, dollars_per_prompt_token: float | None) -> None:
        """Refuse a call whose prompt alone would cross a budget (the reply's size is not known in advance)."""
        with ledger.lock:
            used, held = ledger.total, ledger.held
            spent = used.tokens + held.tokens
            if self.tokens is not None and spent + prompt_tokens > self.tokens:
                raise BudgetExceeded(
                    f"LLM token budget: the next call needs about {prompt_tokens:,} prompt tokens but only "
                    f"{max(0, self.tokens - spent):,} of {self.tokens:,} are left")
            if self.dollars is not None:
                cost = prompt_tokens * (dollars_per_prompt_token or 0.0)
                paid = used.dollars + held.dollars
                if paid + cost > self.dollars:
                    raise BudgetExceeded(
                        f"LLM dollar budget: the next call costs about ${cost:.4f} but only "
                        f"${max(0.0, self.dollars - paid):.4f} of ${self.dollars:.2f} is left")

    @contextmanager
    def reserve(self, ledger: Ledger, tokens: int, dollars: float) -> Iterator[None]:
        """Hold `tokens` and `dollars` for one call while it is in flight; BudgetExceeded (nothing held) when a
        budget is already used up. Book the call in the ledger before leaving the block."""
        with ledger.lock:
            reason = self.reason(ledger)
            if reason is not None:
                raise BudgetExceeded(reason)
            ledger.hold(tokens, dollars)
        try:
            yield
        finally:
            ledger.release(tokens, dollars)
