"""The built-in agents' token budget holds when the provider's usage report lies, and no report, new or
already written to a run's ledger, can drive the ledger below zero."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from meta_agent.llm import BudgetExceeded, Ledger, LLMBudget, LLMClient
from meta_agent.llm.accounting import USAGE_FILE, LedgerError
from tests.llm.conftest import FAST_RETRY
from tests.llm.replay_server import Fault, ReplayServer

PROMPT = [{"role": "user", "content": "Review this harness change. " + "x" * 4_000}]
"""About 1,000 tokens by the local estimate."""


def _completion(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {"id": "chatcmpl-lie", "object": "chat.completion", "created": 1, "model": "replay",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "looks right " * 100},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


@pytest.mark.parametrize("prompt_tokens,completion_tokens", [(0, 0), (-1_000_000_000, -5), (10**15, 10**15)],
                         ids=["zero", "negative", "absurd"])
def test_the_token_budget_stops_a_run_whose_provider_reports_no_usage(
        prompt_tokens: int, completion_tokens: int, serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve(faults=[Fault(body=_completion(prompt_tokens, completion_tokens), times=100)])
    ledger = Ledger(tmp_path / USAGE_FILE)
    client = LLMClient("openai/replay", ledger=ledger, budget=LLMBudget(tokens=4_500), api_base=server.api_base,
                       retry=FAST_RETRY)
    with pytest.raises(BudgetExceeded, match="token budget"):
        for _ in range(20):
            client.complete(PROMPT, agent="coder")
    assert len(server.requests) == 3, "three ~1,300-token calls fit in 4,500; the fourth is not sent"
    total = Ledger(tmp_path / USAGE_FILE).total
    assert 3_000 < total.tokens <= 4_500 and total.prompt_tokens >= 3 * 1_000
    assert total.completion_tokens >= 3 * len("looks right " * 100) // 4 - 3


def test_a_ledger_poisoned_by_a_negative_report_is_refused_on_load(tmp_path: Path) -> None:
    path = tmp_path / USAGE_FILE
    Ledger(path).record("coder", "g0", 1_200, 300, 0.01)
    state = json.loads(path.read_text())
    state["total"]["prompt_tokens"] = -999_998_800  # what one report of -1e9 tokens left behind
    path.write_text(json.dumps(state))
    with pytest.raises(LedgerError) as refused:
        Ledger(path)
    message = str(refused.value)
    assert str(path) in message and "total.prompt_tokens = -999998800" in message and "delete it" in message
    state["total"]["prompt_tokens"], state["by_agent"]["coder"]["dollars"] = 1_200, -3.5
    path.write_text(json.dumps(state))
    with pytest.raises(LedgerError, match=r"by_agent\.coder\.dollars = -3\.5"):
        Ledger(path)
    with pytest.raises(ValueError, match="must be finite and not negative"):
        Ledger().record("coder", None, -1_000_000_000, 0, None)
    with pytest.raises(ValueError, match="must be finite and not negative"):
        Ledger().record("coder", None, 10, 10, float("nan"))
