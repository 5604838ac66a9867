"""External coding agents as coders: each runs in the candidate's sandbox against a recorded session
in the API it speaks, reaching the model only through meta-agent's relay, and leaves a real commit
that passes the backtest."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from meta_agent.agents.external.relay import exchanges
from meta_agent.agents.llm_proposer import LLMStop
from meta_agent.backtest.static import run_static
from meta_agent.config import BudgetSettings
from meta_agent.gitops import trailers
from meta_agent.llm.transcript import render
from sandboxes import Limits, Sandbox
from tests.llm.conftest import MathBench, make_proposer, strict_answer_hypothesis
from tests.llm.replay_server import ReplayServer

pytestmark = pytest.mark.slow  # each test runs a whole agent session in the sandbox

CODERS = {
    # coder: (recorded conversation, coder model, Anthropic base?, path the agent calls, its final words)
    "mini-swe-agent": ("mini_swe_strict_answer", None, False, "/v1/chat/completions", "Submitted after 4 model calls"),
    "claude-code": ("claude_code_strict_answer", "anthropic/claude-sonnet-4-5", True, "/v1/messages?beta=true",
                    "claude-code, 4 turns"),
    "codex": ("codex_strict_answer", "openai/gpt-5.5", False, "/v1/responses", "codex: correctness now pays"),
}


@pytest.mark.parametrize("coder", sorted(CODERS))
def test_an_external_coder_implements_a_hypothesis_that_passes_the_backtest(
        coder: str, serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox,
        tmp_path: Path) -> None:
    conversation, model, anthropic, path, words = CODERS[coder]
    server = serve(conversation)
    proposer = make_proposer(server, tmp_path / "run", coder=coder, coder_model=model,
                             api_base=server.origin if anthropic else server.api_base)
    commit, outcome = math_bench.implement(proposer, strict_answer_hypothesis(), sandbox)
    assert server.errors == []
    assert outcome.ok and commit is not None, outcome.reason
    assert words in outcome.summary and "sprayed numbers" in outcome.summary

    repo = math_bench.repo
    changed = sorted(repo.git.diff("--name-only", math_bench.main, commit).split())
    assert changed == ["harness/math/rewards.py", "tests/test_math.py"]
    assert trailers(repo, commit)["Skills-Used"] == "strict-final-answer"
    static = run_static(repo, math_bench.main, commit, sandbox, Limits(timeout_s=300), tmp_path / "static")
    assert static.passed, static.reason

    transcript = tmp_path / "run" / "transcripts" / f"g0-c0-coder-{coder}.jsonl"
    calls = [c for c in exchanges(transcript) if c["method"] == "POST"]
    assert len(calls) == 4 and all(c["status"] == 200 and c["path"] == path for c in calls)
    assert "held-by-meta-agent" not in transcript.read_text(), "the transcript holds no credential"
    text = render(transcript)
    assert f"--- POST {path} · HTTP 200" in text and "=== end: ok" in text
    assert "python -m harness selftest" in text and "sprayed numbers" in text, "what the agent said and ran"
    usage = json.loads((tmp_path / "run" / "llm-usage.json").read_text())
    assert usage["by_agent"]["coder"]["calls"] == 4
    assert usage["by_agent"]["coder"]["prompt_tokens"] == sum(c["usage"]["prompt_tokens"] for c in calls) > 0
    assert usage["by_agent"]["coder"]["completion_tokens"] == sum(c["usage"]["completion_tokens"] for c in calls)


def test_an_external_coder_that_never_finishes_fails_its_candidate_within_its_turns(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("mini_swe_forever")
    proposer = make_proposer(server, tmp_path / "run", coder="mini-swe-agent", max_coder_steps=3)
    commit, outcome = math_bench.implement(proposer, strict_answer_hypothesis(), sandbox)
    assert commit is None and not outcome.ok
    assert "did not finish" in outcome.reason and "LimitsExceeded" in outcome.reason
    assert len(server.requests) == 3


def test_an_external_coder_stops_the_run_when_the_llm_budget_is_used(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("mini_swe_strict_answer")
    proposer = make_proposer(server, tmp_path / "run", coder="mini-swe-agent", budget=BudgetSettings(llm_tokens=500))
    with pytest.raises(LLMStop, match="token budget used up"):
        math_bench.implement(proposer, strict_answer_hypothesis(), sandbox)
    assert len(server.requests) == 1, "the relay refused every request after the budget ran out"
    transcript = (tmp_path / "run" / "transcripts" / "g0-c0-coder-mini-swe-agent.jsonl").read_text()
    assert '"type": "refused"' in transcript


def test_an_external_coder_repairs_the_failure_it_is_shown(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    repo, limits = math_bench.repo, Limits(timeout_s=300)
    failed, reason = math_bench.failed_at_static(sandbox)
    server = serve("mini_swe_repair_static")
    proposer = make_proposer(server, tmp_path / "run", coder="mini-swe-agent")
    commit, outcome = math_bench.repair(proposer, sandbox, failed, reason)
    assert server.errors == []
    assert outcome.ok and commit is not None, outcome.reason
    assert [p.hexsha for p in repo.commit(commit).parents] == [failed], "the repair is a new commit on the attempt"
    assert run_static(repo, math_bench.main, commit, sandbox, limits, tmp_path / "static-2").passed
    assert (tmp_path / "run" / "transcripts" / "g0-c0-coder-mini-swe-agent-repair1.jsonl").is_file()
