"""The LLM layer: one litellm client for every provider, with retries, budgets, accounting and transcripts.

(litellm's price map is the bundled one: `meta_agent/__init__.py` says so before anything imports it.)
"""

from meta_agent.llm.accounting import Ledger, Usage
from meta_agent.llm.budget import LLMBudget
from meta_agent.llm.client import LLMClient, RetryPolicy
from meta_agent.llm.errors import (
    BudgetExceeded,
    LLMAuthError,
    LLMBadReply,
    LLMError,
    LLMRequestError,
    LLMUnavailable,
)
from meta_agent.llm.reply import ChatReply, ToolCall

__all__ = [
    "BudgetExceeded",
    "ChatReply",
    "LLMAuthError",
    "LLMBadReply",
    "LLMBudget",
    "LLMClient",
    "LLMError",
    "LLMRequestError",
    "LLMUnavailable",
    "Ledger",
    "RetryPolicy",
    "ToolCall",
    "Usage",
]
