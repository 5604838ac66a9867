"""Fault injection through the replay server: what a flaky provider or a misbehaving model does to a run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from meta_agent.agents.base import Hypothesis
from meta_agent.agents.llm_proposer import LLMProposer, LLMStop
from meta_agent.config import BudgetSettings, ConfigFileError, LLMSettings
from meta_agent.errors import BudgetExhausted
from meta_agent.llm import Ledger, LLMBudget
from meta_agent.llm.transcript import read_events
from sandboxes import Sandbox
from tests.llm.conftest import MathBench, make_proposer, skill_set
from tests.llm.replay_server import Fault, ReplayServer
from tests.llm.test_diagnostician import context


def _hypothesis(title: str) -> Hypothesis:
    return Hypothesis(title=title, failure_mode="test", evidence="test", intervention="test", kind="validity")


def _events(run: Path, stem: str) -> list[dict]:
    return list(read_events(run / "transcripts" / f"{stem}.jsonl"))


def test_a_rate_limit_is_retried_and_the_call_succeeds(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance", faults=[Fault(status=429)])
    hyps = make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert len(hyps) == 2 and len(server.requests) == 3
    first = next(e for e in _events(tmp_path / "run", "g3-diagnostician") if e["type"] == "call")
    assert first["attempts"] == 2


def test_a_500_storm_stops_the_run_cleanly_and_resumably(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance", faults=[Fault(status=500, times=50)])
    with pytest.raises(LLMStop) as info:
        make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert isinstance(info.value, BudgetExhausted), "the loop treats it as a clean stop (exit 3, resumable)"
    assert "did not answer after 3 attempts" in str(info.value) and "resume" in str(info.value)
    assert len(server.requests) == 3
    failed = [e for e in _events(tmp_path / "run", "g3-diagnostician") if e["type"] == "call_failed"]
    assert failed and failed[0]["attempts"] == 3


def test_a_model_that_stops_answering_times_out_and_stops_the_run(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance", faults=[Fault(delay_s=3, times=50)])
    with pytest.raises(LLMStop, match="did not answer"):
        make_proposer(server, tmp_path / "run", timeout_s=0.5).propose(context(tmp_path), k=2)


def test_a_refused_key_names_the_variable_to_set(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance", faults=[Fault(status=401, times=50)])
    with pytest.raises(ConfigFileError, match="OPENAI_API_KEY"):
        make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert len(server.requests) == 1, "auth errors are never retried"


def test_a_missing_key_fails_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigFileError, match="ANTHROPIC_API_KEY"):
        LLMProposer(skills=skill_set(tmp_path), settings=LLMSettings(model="anthropic/claude-sonnet-4-6"),
                    run_dir=tmp_path, budget=BudgetSettings())


def test_a_dollar_budget_needs_a_model_with_a_price(replay_server: ReplayServer, tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="token budget"):
        make_proposer(replay_server, tmp_path / "run", budget=BudgetSettings(llm_dollars=1.0))


def test_a_budget_that_runs_out_mid_step_stops_before_the_call(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    proposer = make_proposer(server, tmp_path / "run", budget=BudgetSettings(llm_tokens=6_000))
    assert proposer.budget_reason() is None
    with pytest.raises(LLMStop, match="LLM token budget") as info:
        proposer.propose(context(tmp_path), k=2)
    assert isinstance(info.value, BudgetExhausted)
    assert len(server.requests) == 1, "the first call fit, the second would have crossed the budget"
    assert Ledger(tmp_path / "run" / "llm-usage.json").total.calls == 1, "usage survives for a resumed run"


def test_budget_reason_says_which_budget_is_used_up() -> None:
    ledger = Ledger()
    ledger.record("coder", "g0", 900, 200, 0.02)
    assert LLMBudget(tokens=2_000).reason(ledger) is None
    assert LLMBudget(tokens=1_000).reason(ledger) == "LLM token budget used up (1,100 of 1,000 tokens in 1 calls)"
    assert "dollar budget used up" in str(LLMBudget(dollars=0.01).reason(ledger))


def test_a_patch_to_a_protected_path_is_refused_and_the_coder_gives_up(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_protected")
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"),
                                           _hypothesis("Log the verifier verdict beside each rollout"), sandbox)
    assert server.errors == []
    assert commit is None and not outcome.ok
    assert outcome.reason.startswith("coder gave up: the verdict would have to be written by harness/io.py")
    tools = [e for e in _events(tmp_path / "run", "g0-c0-coder") if e["type"] == "tool"]
    assert [t["ok"] for t in tools] == [False, False, True]
    assert all("refused: harness/io.py is protected" in t["result"] for t in tools[:2])
    work = tmp_path / "run" / "gen-000" / "cand-0" / "edit"
    assert (work / "harness" / "io.py").read_text() == (Path(math_bench.repo.working_dir) / "harness/io.py").read_text()


def test_an_agent_that_never_stops_calling_tools_hits_the_step_cap(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_misbehaving")
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run", max_coder_steps=5),
                                           _hypothesis("Loop forever"), sandbox)
    assert commit is None and outcome.reason == "coder stopped: step cap reached: 5 tool calls without finishing"
    assert len(server.requests) == 6


def test_a_model_that_stops_calling_tools_is_nudged_once_then_fails(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_misbehaving")
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"), _hypothesis("Say nothing"),
                                           sandbox)
    assert commit is None and "answered twice without calling a tool" in outcome.reason
    assert server.requests[1]["messages"][-1]["content"].startswith("Continue by calling a tool")


def test_malformed_tool_calls_get_one_repair_then_fail_the_candidate(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_misbehaving")
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"), _hypothesis("Send garbage"),
                                           sandbox)
    assert server.errors == []
    assert commit is None
    assert outcome.reason == ("coder stopped: malformed tool call again after a repair request: arguments of "
                              "apply_patch are not valid JSON (Unterminated string starting at, position 9)")


def test_huge_tool_output_is_cut_with_a_marker(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_misbehaving")
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"), _hypothesis("Read everything"),
                                           sandbox)
    assert server.errors == [] and commit is not None, outcome.reason
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    grep = next(m for m in tool_messages if "cut by meta-agent" in m["content"])
    assert len(grep["content"]) < 12_200


def test_tool_arguments_too_big_for_any_tool_are_refused_and_not_kept(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    call = server.state.scenario.conversations[0].turns[0].tool_calls[0]
    call.arguments = '{"path": "' + "a" * 300_000 + '"}'
    make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    second = server.requests[1]["messages"]
    kept = next(m for m in reversed(second) if m["role"] == "assistant")["tool_calls"][0]["function"]["arguments"]
    assert len(kept) <= 200_000, "the oversized arguments are not re-sent on every later call"
    assert "over the 200,000-character limit" in json.dumps(second[-2:])


def test_a_reply_that_is_not_a_completion_is_retried_like_a_dropped_connection(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    empty = {"id": "x", "object": "chat.completion", "created": 0, "model": "replay", "choices": []}
    server = serve("diagnose_zero_variance", faults=[Fault(body=empty)])
    hyps = make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert len(hyps) == 2 and len(server.requests) == 3
    first = next(e for e in _events(tmp_path / "run", "g3-diagnostician") if e["type"] == "call")
    assert first["attempts"] == 2


def test_a_repeated_request_is_answered_from_the_cache_and_costs_nothing(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    ctx = context(tmp_path)
    first = make_proposer(server, tmp_path / "run").propose(ctx, k=2)
    paid = len(server.requests)
    again = make_proposer(server, tmp_path / "run").propose(ctx, k=2)  # a resumed generation
    assert [h.title for h in again] == [h.title for h in first]
    assert len(server.requests) == paid, "nothing was sent to the provider the second time"
    usage = Ledger(tmp_path / "run" / "llm-usage.json").state.total
    assert usage.calls == paid and usage.cached_calls == paid and usage.cached_tokens > 0
    uncached = make_proposer(server, tmp_path / "other", cache=False).propose(ctx, k=2)
    assert len(uncached) == 2 and len(server.requests) == 2 * paid


def test_text_no_utf8_writer_can_take_is_kept_readable(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    conv = server.state.scenario.conversations[0]
    conv.turns[0].content = "lone surrogate \ud800 in the reply " + "x" * 50_000
    make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    call = next(e for e in _events(tmp_path / "run", "g3-diagnostician") if e["type"] == "call")
    content = call["response"]["content"]
    assert "\ufffd" in content and "\ud800" not in content
    assert len(content) < 25_000 and "characters cut by meta-agent" in content
