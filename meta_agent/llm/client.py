"""One client for every provider litellm knows (anthropic/..., openai/..., any OpenAI-compatible base URL).

Retries (tenacity, exponential backoff with jitter) cover what a later attempt can fix: rate limits,
timeouts, dropped connections and 5xx (an outage, `LLMUnavailable`, once they run out). A reply that
arrives but cannot be read (not a completion, JSON nested past any parser, an integer past Python's
digit limit: litellm wraps such local failures as a 500) is retried once, then raised as `LLMBadReply`:
the calling agent's work fails, the run goes on. Auth failures are never retried: the error names the
missing key. Every call is looked up in the response cache, else budget-checked, then accounted (ledger)
and written to the transcript. What a reply carries is cleaned (lone surrogates) and bounded before
anyone keeps it, whether it came from the provider or from the cache.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential_jitter

from meta_agent.llm.accounting import Ledger, believable, text_tokens
from meta_agent.llm.budget import LLMBudget
from meta_agent.llm.cache import ResponseCache
from meta_agent.llm.errors import LLMAuthError, LLMBadReply, LLMRequestError, LLMUnavailable
from meta_agent.llm.reply import ChatReply, ToolCall, bounded
from meta_agent.llm.transcript import Transcript
from meta_agent.tokens import CHARS_PER_TOKEN

LOCAL_API_KEY = "no-key-needed"
"""Sent to an api_base when the provider's key is not set: local servers ignore it, litellm needs one."""
BAD_REPLY_ATTEMPTS = 2
"""Tries of a call whose reply cannot be read: one more may come back readable; more would only repeat it."""
LOCAL_FAILURES = (RecursionError, UnicodeError, ValueError, TypeError, KeyError, IndexError, AttributeError,
                  MemoryError)
"""What reading a reply raises on our side (litellm re-raises them wrapped as a provider's 500)."""


class MalformedResponse(Exception):
    """The provider answered with something that is not a chat completion (no choices, no message)."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    initial_s: float = 2.0
    max_s: float = 60.0


def _litellm() -> Any:
    import litellm  # its bundled price map: `meta_agent/__init__.py` set LITELLM_LOCAL_MODEL_COST_MAP

    litellm.suppress_debug_info = True  # its "Give Feedback" banner on every exception drowns our own message
    return litellm


def _bad_reply(e: BaseException) -> bool:
    """The provider answered, but reading its answer failed here: the innermost cause is a local error, not a
    status, a timeout or a broken connection."""
    if isinstance(e, MalformedResponse):
        return True
    seen: set[int] = set()
    while True:
        inner = e.__cause__ or e.__context__
        if inner is None or id(inner) in seen or len(seen) > 20:
            break
        seen.add(id(inner))
        e = inner
    return isinstance(e, LOCAL_FAILURES)


def _retried(e: BaseException) -> bool:
    return _bad_reply(e) or _is_transient(e)


def _is_transient(e: BaseException) -> bool:
    lt = _litellm()
    if isinstance(e, lt.AuthenticationError | lt.PermissionDeniedError):
        return False
    if isinstance(e, lt.RateLimitError | lt.Timeout | lt.APIConnectionError | MalformedResponse):
        return True
    status = getattr(e, "status_code", None)
    return isinstance(status, int) and status >= 500


def missing_keys(model: str) -> list[str]:
    """Environment variables the provider of `model` needs and that are not set."""
    info = _litellm().validate_environment(model)
    return list(info.get("missing_keys") or [])


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    """A provider-independent size estimate for budget checks (about 4 characters per token)."""
    return len(json.dumps(messages, default=str)) // CHARS_PER_TOKEN + len(json.dumps(tools or [])) // CHARS_PER_TOKEN


def _litellm_cost(response: Any, model: str, fallback: float) -> float:
    """litellm's price for a reply (it knows cached-token discounts and tiered prices); `fallback` when it has
    none, or names one no bill can have."""
    try:
        cost = float(_litellm().completion_cost(completion_response=response, model=model))
    except Exception:
        return fallback
    return cost if math.isfinite(cost) and cost >= 0 else fallback


class LLMClient:
    """Talks to one model; `complete` is the only method that spends tokens."""

    def __init__(self, model: str, *, ledger: Ledger, budget: LLMBudget | None = None, api_base: str | None = None,
                 timeout_s: float = 120, retry: RetryPolicy | None = None, cache: ResponseCache | None = None
                 ) -> None:
        self.model = model
        self.cache = cache
        self.api_base = api_base
        self.timeout_s = timeout_s
        self.ledger = ledger
        self.budget = budget or LLMBudget()
        self.retry = retry or RetryPolicy()
        self.missing = missing_keys(model)
        self.api_key = LOCAL_API_KEY if api_base and self.missing else None

    def check_credentials(self) -> None:
        """Fail before any work when a hosted provider's key is missing (a local api_base needs none)."""
        if self.missing and not self.api_base:
            raise LLMAuthError(self._key_hint("is not set"))

    def _key_hint(self, what: str) -> str:
        keys = " or ".join(self.missing) or "the provider's API key"
        return (f"model {self.model}: {keys} {what}; export it (e.g. `export {(self.missing or ['API_KEY'])[0]}=...`) "
                f"or point --api-base at an OpenAI-compatible server")

    def price(self) -> tuple[float, float] | None:
        """(dollars per prompt token, per completion token), or None when litellm has no price for the model."""
        try:
            info = _litellm().get_model_info(self.model)
        except Exception:
            return None
        return float(info.get("input_cost_per_token") or 0.0), float(info.get("output_cost_per_token") or 0.0)

    def supports_tools(self) -> bool | None:
        """What litellm's model map says about tool calling (None: the model is not in the map)."""
        try:
            return bool(_litellm().supports_function_calling(self.model))
        except Exception:
            return None

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *, agent: str,
                 scope: str | None = None, transcript: Transcript | None = None,
                 new_messages: list[dict[str, Any]] | None = None) -> ChatReply:
        """One chat completion (with retries); accounted under `agent` and `scope`, logged to `transcript`."""
        key = self.cache.key(self.model, self.api_base, messages, tools) if self.cache is not None else None
        reply = self.cache.get(key) if self.cache is not None and key is not None else None
        if reply is None:
            reply = self._call(messages, tools, transcript)
            if self.cache is not None and key is not None:
                self.cache.put(key, reply)
        reply.cache_key = key
        self.ledger.record(agent, scope, reply.prompt_tokens, reply.completion_tokens, reply.cost, cached=reply.cached)
        if transcript is not None:
            transcript.call(new_messages if new_messages is not None else messages, len(messages),
                            [t["function"]["name"] for t in tools or []], reply, self.model)
        return reply

    def handled(self, reply: ChatReply) -> None:
        """The caller acted on `reply` without crashing: the cache may now serve it again (see llm/cache.py)."""
        if self.cache is not None and reply.cache_key is not None and not reply.cached:
            self.cache.mark_handled(reply.cache_key)

    def _call(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
              transcript: Transcript | None) -> ChatReply:
        price = self.price()
        self.budget.ensure_room(self.ledger, estimate_tokens(messages, tools), price[0] if price else None)
        lt = _litellm()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "timeout": self.timeout_s,
                                  "num_retries": 0, "max_retries": 0, "drop_params": True}
        if tools:
            kwargs["tools"] = tools
            # litellm 1.106 imports its MCP gateway (and the optional `mcp` package) for any request with
            # tools unless told to skip it; meta-agent's tools are plain functions, never MCP servers.
            kwargs["_skip_mcp_handler"] = True
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        attempts = 0
        started = time.monotonic()

        def count(_state: RetryCallState) -> None:
            nonlocal attempts
            attempts += 1

        def ask() -> ChatReply:
            response = lt.completion(**kwargs)
            return self._reply(response, price, time.monotonic() - started, attempts, estimate_tokens(messages, tools))

        def give_up(state: RetryCallState) -> bool:
            failed = state.outcome.exception() if state.outcome is not None else None
            limit = BAD_REPLY_ATTEMPTS if failed is not None and _bad_reply(failed) else self.retry.attempts
            return state.attempt_number >= min(limit, self.retry.attempts)

        retrying = Retrying(retry=retry_if_exception(_retried), stop=give_up,
                            wait=wait_exponential_jitter(multiplier=self.retry.initial_s, max=self.retry.max_s,
                                                           jitter=self.retry.initial_s),
                            before=count, reraise=True)
        try:
            reply: ChatReply = retrying(ask)
        except Exception as e:
            error = self._classify(e, attempts, time.monotonic() - started)
            if transcript is not None:
                transcript.failed_call(str(error), attempts)
            raise error from e
        return reply

    def _classify(self, e: Exception, attempts: int, seconds: float) -> Exception:
        lt = _litellm()
        detail = f"{type(e).__name__}: {str(e)[:300]}"
        if isinstance(e, lt.AuthenticationError | lt.PermissionDeniedError):
            return LLMAuthError(self._key_hint("was refused by the provider") + f" ({detail})")
        if _bad_reply(e):
            return LLMBadReply(f"model {self.model} answered {attempts} times with a reply that cannot be read "
                               f"(last: {detail})")
        if _is_transient(e):
            return LLMUnavailable(f"model {self.model} did not answer after {attempts} attempts in {seconds:.0f} s "
                                  f"(last: {detail}); check the provider or --api-base, then resume the run")
        return LLMRequestError(f"model {self.model} rejected the request: {detail}")

    def _reply(self, response: Any, price: tuple[float, float] | None, latency: float, attempts: int,
               prompt_estimate: int) -> ChatReply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise MalformedResponse("the response has no choices")
        choice = choices[0]
        msg = getattr(choice, "message", None)
        if msg is None:
            raise MalformedResponse("the response's first choice has no message")
        content = msg.content if isinstance(msg.content, str) else "" if msg.content is None else str(msg.content)
        calls = []
        for c in msg.tool_calls or []:
            fn = getattr(c, "function", None)
            raw = getattr(fn, "arguments", None) or ""
            raw = raw if isinstance(raw, str) else json.dumps(raw, default=str)
            calls.append(ToolCall(id=str(getattr(c, "id", None) or f"call_{uuid.uuid4().hex[:12]}"),
                                  name=str(getattr(fn, "name", None) or ""), arguments=raw))
        usage = getattr(response, "usage", None)
        reported = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
        prompt = believable(reported[0], prompt_estimate)  # a provider's report is a claim: checked locally
        completion = believable(reported[1], text_tokens(content) + sum(text_tokens(c.arguments) for c in calls))
        cost = None
        if price is not None:
            cost = prompt * price[0] + completion * price[1]
            if (prompt, completion) == reported:  # litellm prices from the report: only a believed one
                cost = _litellm_cost(response, self.model, cost)
        finish = getattr(choice, "finish_reason", None)
        return bounded(ChatReply(content=content, tool_calls=calls, finish_reason=str(finish)[:100] if finish else None,
                                 prompt_tokens=prompt, completion_tokens=completion, cost=cost, latency_s=latency,
                                 attempts=attempts))
