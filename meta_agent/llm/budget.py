"""Hard LLM budgets (tokens, dollars) for a whole run: checked before every call, never after the money is gone."""

from __future__ import annotations

from dataclasses import dataclass

from meta_agent.llm.accounting import Ledger
from meta_agent.llm.errors import BudgetExceeded


@dataclass(frozen=True)
class LLMBudget:
    tokens: int | None = None
    dollars: float | None = None

    def reason(self, ledger: Ledger) -> str | None:
        """None while there is room; otherwise a sentence saying which budget is used up."""
        used = ledger.total
        if self.tokens is not None and used.tokens >= self.tokens:
            return f"LLM token budget used up ({used.tokens:,} of {self.tokens:,} tokens in {used.calls} calls)"
        if self.dollars is not None and used.dollars >= self.dollars:
            return f"LLM dollar budget used up (${used.dollars:.4f} of ${self.dollars:.2f} in {used.calls} calls)"
        return None

    def ensure_room(self, ledger: Ledger, prompt_tokens: int, dollars_per_prompt_token: float | None) -> None:
        """Refuse a call whose prompt alone would cross a budget (the reply's size is not known in advance)."""
        used = ledger.total
        if self.tokens is not None and used.tokens + prompt_tokens > self.tokens:
            raise BudgetExceeded(
                f"LLM token budget: the next call needs about {prompt_tokens:,} prompt tokens but only "
                f"{max(0, self.tokens - used.tokens):,} of {self.tokens:,} are left")
        if self.dollars is not None:
            cost = prompt_tokens * (dollars_per_prompt_token or 0.0)
            if used.dollars + cost > self.dollars:
                raise BudgetExceeded(
                    f"LLM dollar budget: the next call costs about ${cost:.4f} but only "
                    f"${max(0.0, self.dollars - used.dollars):.4f} of ${self.dollars:.2f} is left")
