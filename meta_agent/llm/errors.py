"""What can go wrong when talking to a model, split by what the caller should do about it."""

from __future__ import annotations

from meta_agent.errors import UserError


class LLMError(UserError, RuntimeError):
    """Base class of the LLM layer's errors."""


class LLMAuthError(LLMError):
    """The provider refused the credentials (401/403) or none are configured: a setup problem, never retried."""


class LLMUnavailable(LLMError):
    """Retries on rate limits, timeouts, connection errors and 5xx ran out: the provider is not answering now."""


class LLMRequestError(LLMError):
    """The provider rejected this request (4xx other than auth: bad request, context window, unknown model)."""


class BudgetExceeded(LLMError):
    """A hard token or dollar budget would be exceeded by the next call; nothing was sent."""


class LLMBadReply(LLMError):
    """The provider answered, but with something no client can use (JSON nested past any parser, an integer of
    thousands of digits, a body that is not a completion), again after a retry. Not an outage: the agent whose
    call it was fails its work with this reason, and the run goes on."""
