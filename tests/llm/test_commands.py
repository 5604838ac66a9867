"""`meta-agent llm check | transcript | usage` as a user runs them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.commands.llm import app
from meta_agent.llm import Ledger
from meta_agent.llm.reply import ChatReply, ToolCall
from meta_agent.llm.transcript import Transcript
from tests.llm.replay_server import Conversation, Fault, ReplayServer, Scenario, Turn

runner = CliRunner()


def test_check_reports_latency_tokens_cost_and_tool_calling(serve: Callable[..., ReplayServer]) -> None:
    server = serve("check")
    res = runner.invoke(app, ["check", "--model", "openai/gpt-4o-mini", "--api-base", server.api_base])
    assert res.exit_code == 0, res.output
    assert "tool calling yes: add(" in res.output and "litellm's model map says supported" in res.output
    assert "tokens       " in res.output and "latency      " in res.output
    assert "cost         $0.0000" in res.output, "a priced model gets a dollar figure"


def test_check_with_a_coder_checks_the_agent_and_speaks_anthropic_messages(
        serve: Callable[..., ReplayServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve("check")
    res = runner.invoke(app, ["check", "--model", "anthropic/claude-sonnet-4-5", "--api-base", server.origin,
                              "--coder", "claude-code"])
    assert res.exit_code == 0, res.output
    assert "coder        claude-code (" in res.output and "over the anthropic API" in res.output
    assert "tool calling yes: add(" in res.output, "litellm's Anthropic client against the recorded server"
    monkeypatch.setenv("META_AGENT_CODERS_DIR", str(tmp_path))
    res = runner.invoke(app, ["check", "--model", "openai/gpt-5.5", "--api-base", server.api_base, "--coder", "codex"])
    assert res.exit_code == 1 and "@openai/codex is not installed" in res.output and "make setup" in res.output


def test_check_says_so_when_the_model_does_not_call_tools(replay_server: ReplayServer, tmp_path: Path) -> None:
    replay_server.load(Scenario(conversations=[Conversation(name="talker", agent="connectivity check",
                                                            turns=[Turn(content="2 + 3 = 5")])]))
    config = tmp_path / "cfg.yaml"
    config.write_text(f"llm: {{model: openai/replay, api_base: '{replay_server.api_base}'}}\n")
    res = runner.invoke(app, ["check", "--config", str(config)])
    assert res.exit_code == 2
    assert "tool calling no: answered in text" in res.output and "cost         unknown" in res.output


def test_check_explains_an_unreachable_server(replay_server: ReplayServer) -> None:
    replay_server.load(Scenario(faults=[Fault(status=503, times=10)]))
    res = runner.invoke(app, ["check", "--model", "openai/replay", "--api-base", replay_server.api_base])
    assert res.exit_code == 1 and "did not answer after 2 attempts" in res.output


def test_transcript_pretty_prints_a_session(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = Transcript(path, agent="coder", model="m", meta={"run": "r"})
    reply = ChatReply(content="Reading it.", tool_calls=[ToolCall(id="1", name="read_file", arguments='{"path": "a"}')],
                      prompt_tokens=10, completion_tokens=5, cost=None, latency_s=0.2)
    t.call([{"role": "system", "content": "sys"}, {"role": "user", "content": "task " * 300}], 2, ["read_file"],
           reply, "m")
    t.tool("1", "read_file", '{"path": "a"}', "line one", True, 0.01)
    t.end(True, "commit: done")
    res = runner.invoke(app, ["transcript", str(path)])
    assert res.exit_code == 0
    assert "--- call 1 · 10 + 5 tokens · cost unknown" in res.output and "-> read_file(" in res.output
    assert "--full shows all" in res.output
    assert "--full shows all" not in runner.invoke(app, ["transcript", "--full", str(path)]).output


def test_usage_lists_totals_per_agent_and_generation(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "llm-usage.json")
    ledger.record("diagnostician", "g0", 5_000, 400, None)
    ledger.record("coder", "g0", 30_000, 2_000, None)
    res = runner.invoke(app, ["usage", str(tmp_path)])
    assert res.exit_code == 0
    assert "total                 2     35,000      2,400    0.0000*" in res.output
    assert "g0 " in res.output and "count as $0" in res.output


@pytest.mark.skipif(not os.environ.get("META_AGENT_LLM_SMOKE_MODEL"),
                    reason="real-provider smoke test: set META_AGENT_LLM_SMOKE_MODEL and the provider's key")
def test_check_against_a_real_provider() -> None:
    res = runner.invoke(app, ["check", "--model", os.environ["META_AGENT_LLM_SMOKE_MODEL"]])
    assert res.exit_code == 0, res.output
