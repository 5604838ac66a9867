"""The LLM layer: one litellm client for every provider, with retries, budgets, accounting and transcripts.

litellm fetches its model price map from the network at import unless told otherwise; meta-agent
runs where only package registries answer, so the bundled map is used (set before any import).
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from meta_agent.llm.accounting import Ledger, Usage
from meta_agent.llm.budget import LLMBudget
from meta_agent.llm.client import LLMClient, RetryPolicy
from meta_agent.llm.errors import BudgetExceeded, LLMAuthError, LLMError, LLMRequestError, LLMUnavailable
from meta_agent.llm.reply import ChatReply, ToolCall

__all__ = [
    "BudgetExceeded",
    "ChatReply",
    "LLMAuthError",
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
