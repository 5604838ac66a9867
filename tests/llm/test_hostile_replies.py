"""A model's reply is data of any shape: whatever it holds fails that agent's work with a reason, never the run,
and a reply whose handling failed is never served again from the cache.

The attacks: tool arguments nested past any parser, an integer of 5,000 digits in a reply, paths the OS refuses
(300 characters, a NUL byte), a tool result that carries a lone surrogate into the next request, and cache
entries that are damaged, oversized or were never acted on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from meta_agent.agents.base import Hypothesis
from meta_agent.agents.coder_tools import SANDBOX_SCRIPT
from meta_agent.gitops import format_message
from meta_agent.llm import Ledger, LLMClient
from meta_agent.llm.agent_loop import AgentSession, run_tool_loop
from meta_agent.llm.cache import ResponseCache
from meta_agent.llm.tools import Tool, ToolResult
from meta_agent.llm.transcript import Transcript, read_events
from meta_agent.workspace import candidate_trailers
from sandboxes import Sandbox
from tests.llm.conftest import FAST_RETRY, MathBench, make_proposer
from tests.llm.replay_server import Conversation, Fault, RecordedCall, ReplayServer, Scenario, Turn
from tests.llm.test_diagnostician import context
from tests.llm.test_faults import _hypothesis

VALID_HYPOTHESIS = {"title": "Drop zero-variance groups", "failure_mode": "zero_variance_group",
                    "evidence": "zero_variance_frac 0.75", "intervention": "filter them", "kind": "performance"}


def _load(server: ReplayServer, agent: str, match: str, turns: list[Turn], faults: list[Fault] | None = None
          ) -> ReplayServer:
    server.load(Scenario(conversations=[Conversation(name=f"hostile-{agent}", agent=agent, match=match,
                                                     turns=turns)], faults=faults or []))
    return server


def _transcript_notes(run: Path, stem: str) -> str:
    return json.dumps([e for e in read_events(run / "transcripts" / f"{stem}.jsonl") if e["type"] == "note"])


def test_tool_arguments_nested_past_any_parser_fail_the_coder_not_the_run(
        replay_server: ReplayServer, math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = _load(replay_server, "coder", "Nest deep", [
        Turn(tool_calls=[RecordedCall(name="list_files", arguments="[" * 60_000 + "]" * 60_000)])])
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"), _hypothesis("Nest deep"), sandbox)
    assert commit is None and not outcome.ok
    assert "reply could not be used" in outcome.reason and "did not answer" not in outcome.reason, outcome.reason
    assert len(server.requests) == 2, "retried once, then taken for what it is: not an outage"


def test_an_integer_of_five_thousand_digits_is_a_bad_reply_not_an_outage(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    body = ('{"id": "x", "object": "chat.completion", "created": 1, "model": "replay", "choices": [{"index": 0, '
            '"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], '
            f'"usage": {{"prompt_tokens": {"9" * 5000}, "completion_tokens": 1}}}}')
    server = serve("diagnose_zero_variance", faults=[Fault(raw=body, times=50)])
    hyps = make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert hyps == [], "the diagnosis failed; no LLMStop, the run goes on"
    assert "reply could not be used" in _transcript_notes(tmp_path / "run", "g3-diagnostician")
    assert len(server.requests) == 2


@pytest.mark.parametrize("path", ["a" * 300, "harness\x00.yaml", "evidence/" + "b" * 5000])
def test_a_path_the_os_refuses_is_a_failed_tool_call_and_the_diagnosis_goes_on(
        replay_server: ReplayServer, tmp_path: Path, path: str) -> None:
    server = _load(replay_server, "diagnostician", "Generation 3 of run", [
        Turn(tool_calls=[RecordedCall(name="list_files", arguments={"path": path}),
                         RecordedCall(name="grep", arguments={"pattern": path[:900]}),
                         RecordedCall(name="read_file", arguments={"path": path})]),
        Turn(expect="is not a file", tool_calls=[RecordedCall(
            name="submit_hypotheses", arguments={"summary": "s", "hypotheses": [VALID_HYPOTHESIS]})])])
    hyps = make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert server.errors == []
    assert [h.title for h in hyps] == ["Drop zero-variance groups"]


def test_a_tool_result_with_a_lone_surrogate_reaches_the_model_cleaned(
        replay_server: ReplayServer, math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    """A file name that is not UTF-8 comes back from the sandbox as a lone surrogate; sent on as is, no
    encoder takes the next request, which litellm reports as a provider's 500."""
    make = "import os; os.close(os.open(b'harness/notes-\\xff.txt', os.O_CREAT | os.O_WRONLY, 0o644))"
    server = _load(replay_server, "coder", "Odd names", [
        Turn(tool_calls=[RecordedCall(name="run_python", arguments={"code": make})]),
        Turn(tool_calls=[RecordedCall(name="list_files", arguments={"path": "harness"})]),
        Turn(expect="notes-", tool_calls=[RecordedCall(name="give_up", arguments={"reason": "nothing to change"})])])
    _, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"), _hypothesis("Odd names"), sandbox)
    assert server.errors == [] and outcome.reason == "coder gave up: nothing to change", outcome.reason
    listed = [m for m in server.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "notes-\ufffd.txt" in listed


class AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


TOOLS = ("read_file", "list_files", "grep", "run_python", "submit_hypotheses")


def _client(server: ReplayServer, cache: ResponseCache, tmp_path: Path) -> LLMClient:
    return LLMClient("openai/replay", ledger=Ledger(tmp_path / "usage.json"), api_base=server.api_base,
                     retry=FAST_RETRY, cache=cache)


def _session(client: LLMClient, tmp_path: Path) -> AgentSession:
    transcript = Transcript(tmp_path / "t.jsonl", agent="diagnostician", model="openai/replay")
    return AgentSession(client, transcript, agent="diagnostician", scope="g3", system="You are meta-agent's "
                        "diagnostician.", user="Generation 3 of run run: diagnose.")


def test_a_reply_whose_handling_crashed_is_asked_for_again_not_replayed(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    cache = ResponseCache(tmp_path / "cache")

    def crash(_: object) -> ToolResult:
        raise KeyboardInterrupt  # what a kill in the middle of acting on the reply leaves: nothing handled

    tools = [Tool(name, "t", AnyArgs, crash) for name in TOOLS]
    with pytest.raises(KeyboardInterrupt):
        run_tool_loop(_session(_client(server, cache, tmp_path), tmp_path), tools, max_steps=5)
    asked = len(server.requests)
    with pytest.raises(KeyboardInterrupt):
        run_tool_loop(_session(_client(server, cache, tmp_path), tmp_path), tools, max_steps=5)
    assert len(server.requests) == asked + 1, "the model was asked again, not served the reply that crashed"


def test_a_handled_reply_is_served_from_the_cache(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    cache = ResponseCache(tmp_path / "cache")
    tools = [Tool(name, "t", AnyArgs, lambda _: ToolResult("done", done=True)) for name in TOOLS]
    run_tool_loop(_session(_client(server, cache, tmp_path), tmp_path), tools, max_steps=5)
    asked = len(server.requests)
    run_tool_loop(_session(_client(server, cache, tmp_path), tmp_path), tools, max_steps=5)
    assert len(server.requests) == asked


def test_damaged_cache_entries_are_misses_and_cached_replies_get_a_live_replys_bounds(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    lone = json.dumps({"reply": {"content": "\ud800"}, "handled": True}).encode()
    for key, content in [("a" * 64, b"not json"), ("b" * 64, b"[" * 100_000), ("c" * 64, b"\xff\xfe" * 100),
                         ("f" * 64, lone), ("0" * 64, b"{" * 5_000_000)]:
        path = tmp_path / "cache" / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        assert cache.get(key) is None
    (tmp_path / "cache" / "dd" / ("d" * 64 + ".json")).mkdir(parents=True)
    assert cache.get("d" * 64) is None
    huge = {"content": "x" * 3_000_000, "tool_calls": [{"id": "c", "name": "n" * 5000,
                                                                   "arguments": "{" * 300_000}]}
    path = tmp_path / "cache" / "ee" / ("e" * 64 + ".json")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"reply": huge, "handled": True}))
    served = cache.get("e" * 64)
    assert served is not None and served.cached
    assert len(served.content) < 25_000
    [call] = served.tool_calls
    assert len(call.name) <= 200 and len(call.arguments) <= 200_000 and call.cut > 0, "refused when called"


def test_an_edit_through_a_link_is_refused_whatever_name_it_uses(
        replay_server: ReplayServer, math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    """`refuse_path` sees the path as written; the file an edit reaches is checked where it is written."""
    link = "import os; os.symlink('__main__.py', 'harness/entry.py')"
    server = _load(replay_server, "coder", "Edit by another name", [
        Turn(tool_calls=[RecordedCall(name="run_python", arguments={"code": link})]),
        Turn(tool_calls=[RecordedCall(name="write_file", arguments={"path": "harness/entry.py",
                                                                     "content": "print('owned')\n"})]),
        Turn(expect="symbolic link", tool_calls=[RecordedCall(name="give_up", arguments={"reason": "refused"})])])
    _, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"), _hypothesis("Edit by another name"),
                                      sandbox)
    assert server.errors == [] and outcome.reason == "coder gave up: refused", outcome.reason
    entry = tmp_path / "run" / "gen-000" / "cand-0" / "edit" / "harness" / "__main__.py"
    assert entry.read_text() == (Path(math_bench.repo.working_dir) / "harness" / "__main__.py").read_text()


def test_a_hypothesis_s_free_text_is_bounded_before_it_reaches_prompts_and_commits() -> None:
    h = Hypothesis(title="t", failure_mode="f" * 10_000, evidence="e" * 150_000, intervention="i" * 150_000,
                   kind="validity", evidence_rollouts=["r" * 5_000])
    assert len(h.evidence) < 4_200 and len(h.intervention) < 4_200 and "characters cut by meta-agent" in h.evidence
    assert len(h.failure_mode) < 300 and len(h.evidence_rollouts[0]) < 300
    message = format_message(h.title, h.intervention, candidate_trailers(h, "run/0-0"))
    assert len(message) < 6_000


def test_an_edit_that_cannot_be_encoded_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    args = json.dumps({"path": "a.py", "content": "x = '\ud800'\n"})  # ASCII-escaped: the surrogate survives
    done = subprocess.run([sys.executable, "-c", SANDBOX_SCRIPT, "write", args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["ok"] and "cannot be written as UTF-8" in result["text"]
    assert (tmp_path / "a.py").read_text() == "x = 1\n", "nothing was truncated"


def test_a_session_past_its_deadline_ends_with_that_reason_before_asking_again(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    tools = [Tool(name, "t", AnyArgs, lambda _: ToolResult("ok")) for name in TOOLS]
    result = run_tool_loop(_session(_client(server, ResponseCache(tmp_path / "c"), tmp_path), tmp_path), tools,
                           max_steps=50, deadline_s=0.0)
    assert not result.finished and result.reason.startswith("time limit reached")
    assert server.requests == []
