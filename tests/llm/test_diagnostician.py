"""The diagnostician over HTTP: structured hypotheses from a report, one repair for malformed output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import git
import pytest

from meta_agent.agents.base import ProposalContext
from meta_agent.evolve.evidence import write_evidence
from meta_agent.gitops import init_harness
from meta_agent.llm.transcript import read_events
from sandboxes import Sandbox
from tests.llm.conftest import make_proposer, skill_set, zero_variance_report, zero_variance_rollouts
from tests.llm.replay_server import ReplayServer


def context(tmp_path: Path, generation: int = 3) -> ProposalContext:
    repo = init_harness(tmp_path / "harness", "math")
    return ProposalContext(run_id="run", generation=generation, domain="math", report=zero_variance_report(),
                           harness_dir=Path(repo.working_dir), skills=skill_set(tmp_path / "run"), seed=0)


def events(tmp_path: Path, kind: str) -> list[dict]:
    path = tmp_path / "run" / "transcripts" / "g3-diagnostician.jsonl"
    return [e for e in read_events(path) if e["type"] == kind]


def test_a_zero_variance_report_becomes_structured_hypotheses(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    hyps = make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert server.errors == []
    assert [h.title for h in hyps] == ["Drop zero-variance groups from the GRPO loss",
                                       "Train where groups still disagree (pass-rate curriculum)"]
    first = hyps[0]
    assert first.kind == "performance" and first.failure_mode == "zero_variance_group"
    assert first.evidence_rollouts == ["s1-g0-0", "s1-g0-1"] and "0.75" in first.evidence
    assert first.predicted_text() == "zero_variance_frac down, selection_accuracy up"
    assert hyps[1].skills_used == ["difficulty-curriculum"], "a skill the library does not hold is dropped"
    assert any("group-size-doubling" in n["text"] for n in events(tmp_path, "note"))
    prompt = server.requests[0]["messages"][1]["content"]
    assert "zero_variance_frac: 0.75" in prompt and "s1-g0-0" in prompt, "the report's numbers and exemplars"
    assert "skill `dynamic-sampling`" in prompt, "skills whose triggers match are retrieved into the prompt"
    assert "def correctness" in prompt, "the key harness sources are inlined"


def test_at_most_k_hypotheses_are_kept(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_zero_variance")
    hyps = make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=1)
    assert len(hyps) == 1
    assert server.requests[0]["messages"][0]["content"].count("at most 1 hypotheses") == 1


def test_a_malformed_submission_is_repaired_once(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_malformed")
    hyps = make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2)
    assert server.errors == []
    assert [h.title for h in hyps] == ["Drop zero-variance groups from the GRPO loss"]
    tools = events(tmp_path, "tool")
    assert [t["ok"] for t in tools] == [False, True]
    assert "not valid JSON" in tools[0]["result"]


def test_a_second_malformed_submission_yields_no_hypotheses_and_says_why(
        serve: Callable[..., ReplayServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve("diagnose_malformed_twice")
    assert make_proposer(server, tmp_path / "run").propose(context(tmp_path), k=2) == []
    end = events(tmp_path, "end")[-1]
    assert not end["ok"] and "malformed tool call again after a repair request" in end["outcome"]
    assert "hypotheses: Input should be a valid list" in end["outcome"]
    assert "no usable hypotheses" in capsys.readouterr().err


def _evidence_context(tmp_path: Path) -> ProposalContext:
    ctx = context(tmp_path, generation=4)
    repo = git.Repo(ctx.harness_dir)
    rollouts, _tasks = zero_variance_rollouts()
    ctx.evidence_dir = write_evidence(tmp_path / "evidence", generation=4, rollouts=rollouts, report_md="# report",
                                      repo=repo, main=repo.head.commit.hexsha)
    return ctx


def test_the_diagnostician_opens_and_cites_rollouts_beyond_the_reports_exemplars(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_evidence")
    [h] = make_proposer(server, tmp_path / "run").propose(_evidence_context(tmp_path), k=1)
    assert server.errors == []
    prompt = server.requests[0]["messages"][1]["content"]
    assert "s1-g3-1" not in prompt, "not among the report's exemplars: the model found it itself"
    assert h.evidence_rollouts == ["s1-g3-1", "s1-g0-0"]
    assert h.surface == "prompts", "routed to the prompts specialist"
    path = tmp_path / "run" / "transcripts" / "g4-diagnostician.jsonl"
    reads = [e for e in read_events(path) if e["type"] == "tool" and e["name"] == "read_file"]
    assert [r["ok"] for r in reads] == [True, True]


def test_a_diagnosis_is_bounded_by_its_token_budget_and_told_to_finish_first(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_evidence")
    assert make_proposer(server, tmp_path / "full").propose(_evidence_context(tmp_path / "a"), k=1)
    calls = [e for e in read_events(tmp_path / "full" / "transcripts" / "g4-diagnostician.jsonl")
             if e["type"] == "call"]
    first = calls[0]["usage"]["prompt_tokens"] + calls[0]["usage"]["completion_tokens"]
    # A budget the first call fills to 90%: the model is told to finish, then the budget ends the session.
    hyps = make_proposer(server, tmp_path / "tight", diagnostician_tokens=int(first / 0.9)).propose(
        _evidence_context(tmp_path / "b"), k=1)
    assert hyps == [] and server.errors == []
    notes = [n["text"] for n in read_events(tmp_path / "tight" / "transcripts" / "g4-diagnostician.jsonl")
             if n["type"] == "note"]
    assert any("asking the model to finish" in n for n in notes) and any("token budget reached" in n for n in notes)
    assert "Call submit_hypotheses now" in str(server.requests[-1]["messages"][-1]["content"])


@pytest.mark.slow  # opens a sandbox session
def test_the_diagnostician_counts_over_all_rollouts_with_python_in_the_sandbox(
        serve: Callable[..., ReplayServer], sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("diagnose_python")
    ctx = _evidence_context(tmp_path)
    ctx.sandbox = sandbox
    [h] = make_proposer(server, tmp_path / "run").propose(ctx, k=1)
    assert server.errors == []
    assert "s1-g3 2/4" in h.evidence
    [ran] = [e for e in read_events(tmp_path / "run" / "transcripts" / "g4-diagnostician.jsonl")
             if e["type"] == "tool" and e["name"] == "run_python"]
    assert ran["ok"] and "'s1-g0': '0/4'" in ran["result"] and "harness importable" in ran["result"]
    assert ctx.evidence_dir is not None and not (ctx.evidence_dir / "note.txt").exists()
    assert "evidence is read-only: OSError" in ran["result"]


def test_without_a_sandbox_the_diagnostician_has_no_python_tool(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("diagnose_evidence")
    make_proposer(server, tmp_path / "run").propose(_evidence_context(tmp_path), k=1)
    assert "run_python" not in [t["function"]["name"] for t in server.requests[0]["tools"]]
