"""The coder agent over HTTP against a recorded session: a real sandbox, real edits, a real commit and backtest."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from meta_agent.agents.base import Hypothesis
from meta_agent.backtest.gate import GateSettings, decide
from meta_agent.backtest.replay import run_replay
from meta_agent.backtest.static import run_static
from meta_agent.contract import ReplayRecord
from meta_agent.evolve.evidence import write_evidence
from meta_agent.gitops import export_tree, trailers
from meta_agent.harness_runner import HarnessRunner
from meta_agent.llm.transcript import read_events, render
from meta_agent.skills.runner import prepare_kit
from meta_agent.workspace import implement
from sandboxes import Limits, Sandbox
from tests.llm.conftest import MathBench, make_proposer, strict_answer_hypothesis
from tests.llm.replay_server import ReplayServer, Scenario, from_transcript


def _main_replay(bench: MathBench, sandbox: Sandbox) -> dict[str, ReplayRecord]:
    work = export_tree(bench.repo, bench.main, bench.root / "main-work")
    out = bench.root / "main-replay" / "replay.jsonl"
    rs = bench.replay_set
    with HarnessRunner(sandbox, work, commit=bench.main, readable=[rs.path.parent, bench.tasks_file.parent],
                       writable=[out.parent]) as h:
        return {r.rollout_id: r for r in h.replay(rollouts=rs.path, tasks=bench.tasks_file, out=out,
                                                  expected=rs.ids)}


pytestmark = pytest.mark.slow  # each test runs a whole recorded coder session through the sandbox


def test_a_recorded_coder_session_yields_a_commit_that_passes_the_backtest(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_strict_answer")
    proposer = make_proposer(server, tmp_path / "run")
    h = strict_answer_hypothesis()
    commit, outcome = math_bench.implement(proposer, h, sandbox)
    assert server.errors == []
    assert outcome.ok and commit is not None, outcome.reason
    assert "0 hacking probes rewarded" in outcome.summary and "11 tool calls" in outcome.summary

    repo = math_bench.repo
    assert repo.commit("cand/test/0-0").hexsha == commit
    t = trailers(repo, commit)
    assert t["Skills-Used"] == "strict-final-answer" and t["Predicted-Effect"] == "probes_rewarded down"
    assert t["Hypothesis"].startswith("probes_rewarded: probes_rewarded 0.67")
    changed = sorted(repo.git.diff("--name-only", math_bench.main, commit).split())
    assert changed == ["harness/math/rewards.py", "tests/test_math.py"]
    assert 'answer="13"' in repo.git.show(f"{commit}:tests/test_math.py"), "the coder fixed its own failing test"

    static = run_static(repo, math_bench.main, commit, sandbox, Limits(timeout_s=300), tmp_path / "static")
    assert static.passed, static.reason
    replay = run_replay(sandbox=sandbox, limits=Limits(timeout_s=300),
                        workdir=export_tree(repo, commit, tmp_path / "cand-work"), commit=commit,
                        replay_set=math_bench.replay_set, tasks_file=math_bench.tasks_file,
                        main_replay=_main_replay(math_bench, sandbox), out=tmp_path / "cand-replay" / "replay.jsonl")
    assert replay.passed and replay.metrics["probes_rewarded_candidate"] == 0
    assert replay.metrics["probes_rewarded_main"] > 0 and replay.metrics["measured_kind"] == "validity"
    # static and replay are what the coder's commit must pass; the gate also wants the candidate's own
    # training before anything merges (tests/evolve run that end to end), so these two alone merge nothing
    verdict = decide("test/0-0", "validity", [static, replay], 0.0, GateSettings())
    assert not verdict.promoted and "nothing reaches main untrained" in verdict.reason, verdict.reason


def test_the_transcript_reads_as_the_session_that_happened(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_strict_answer")
    proposer = make_proposer(server, tmp_path / "run")
    math_bench.implement(proposer, strict_answer_hypothesis(), sandbox)
    path = tmp_path / "run" / "transcripts" / "g0-c0-coder.jsonl"
    events = list(read_events(path))
    calls = [e for e in events if e["type"] == "call"]
    tools = [e for e in events if e["type"] == "tool"]
    assert len(calls) == 10 and len(tools) == 11
    assert [t["ok"] for t in tools if t["name"] == "run_selftest"] == [False, True]
    assert calls[0]["request"]["messages"][0]["role"] == "system", "the first call logs the whole prompt"
    assert all(m["role"] == "tool" for m in calls[3]["request"]["messages"]), "later calls log only what is new"
    assert events[-1] == {**events[-1], "type": "end", "ok": True}
    text = render(path)
    assert "-> apply_patch(" in text and "<- run_selftest error" in text and "=== end: ok: commit:" in text
    usage = json.loads((tmp_path / "run" / "llm-usage.json").read_text())
    assert usage["by_agent"]["coder"]["calls"] == 10 and usage["by_scope"]["g0"]["calls"] == 10


def test_a_transcript_replays_into_the_same_commit(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_strict_answer")
    first, _ = math_bench.implement(make_proposer(server, tmp_path / "first"), strict_answer_hypothesis(), sandbox)
    recorded = from_transcript(tmp_path / "first" / "transcripts" / "g0-c0-coder.jsonl", "from-transcript")
    server.load(Scenario(conversations=[recorded]))
    second, outcome = math_bench.implement(make_proposer(server, tmp_path / "second"), strict_answer_hypothesis(),
                                           sandbox, k=1)
    assert outcome.ok and first is not None and second is not None
    assert math_bench.repo.commit(first).tree == math_bench.repo.commit(second).tree


def test_a_recorded_repair_turn_fixes_the_failure_it_is_shown(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    repo, limits = math_bench.repo, Limits(timeout_s=300)
    failed, reason = math_bench.failed_at_static(sandbox)
    server = serve("coder_repair_static")
    proposer = make_proposer(server, tmp_path / "run")
    commit, outcome = math_bench.repair(proposer, sandbox, failed, reason)
    assert server.errors == []
    assert outcome.ok and commit is not None, outcome.reason
    assert [p.hexsha for p in repo.commit(commit).parents] == [failed], "the repair is a new commit on the attempt"
    assert repo.commit("cand/test/0-0").hexsha == commit
    assert "test_hedged_answers_get_nothing" in repo.git.show(f"{commit}:tests/test_math.py")
    assert run_static(repo, math_bench.main, commit, sandbox, limits, tmp_path / "static-2").passed
    transcript = tmp_path / "run" / "transcripts" / "g0-c0-coder-repair1.jsonl"
    first = next(e for e in read_events(transcript) if e["type"] == "call")
    prompt = first["request"]["messages"][1]["content"]
    assert "rejected it at the static stage" in prompt and "test_hedged_answers_are_paid" in prompt


def test_a_coder_reads_the_generations_rollouts_in_the_evidence_folder_and_nothing_beyond(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    honest = [r for r in math_bench.records if r.rollout_id.startswith("s1-")]
    evidence = write_evidence(tmp_path / "evidence", generation=0, rollouts=honest, report_md="# report",
                              repo=math_bench.repo, main=math_bench.main)
    server = serve("coder_reads_evidence")
    h = strict_answer_hypothesis().model_copy(update={"title": "Check the paid rollouts before editing"})
    commit, outcome = implement(
        repo=math_bench.repo, base=math_bench.main, branch="cand/test/0-0", cand_id="test/0-0", hypothesis=h,
        proposer=make_proposer(server, tmp_path / "run"), sandbox=sandbox, limits=Limits(timeout_s=300),
        work=tmp_path / "run" / "gen-000" / "cand-0" / "edit", kit_dir=prepare_kit(tmp_path / "kit"), readable=[],
        when=None, rollouts=math_bench.rollouts_file, tasks=math_bench.tasks_file, evidence=evidence)
    assert server.errors == []
    assert commit is None and "s1-g0-0.json is paid and verified" in outcome.reason
    tools = [e for e in read_events(tmp_path / "run" / "transcripts" / "g0-c0-coder.jsonl") if e["type"] == "tool"]
    assert [t["ok"] for t in tools[:3]] == [True, True, False]
    assert "s1-g0-0" in tools[0]["result"] and '"verified": true' in tools[1]["result"]
    assert "outside the evidence folder" in tools[2]["result"]


def test_with_specialists_a_hypothesis_goes_to_the_coder_of_its_surface_with_that_roles_budget(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_strict_answer")
    h = strict_answer_hypothesis().model_copy(update={"surface": "rewards"})
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run", specialists=True), h, sandbox)
    assert server.errors == [] and outcome.ok and commit is not None, outcome.reason
    transcript = tmp_path / "run" / "transcripts" / "g0-c0-coder-rewards.jsonl"
    system = next(e for e in read_events(transcript) if e["type"] == "call")["request"]["messages"][0]["content"]
    assert "You are the rewards specialist" in system and "at most 20 tool calls" in system

    tight = make_proposer(serve("coder_strict_answer"), tmp_path / "tight", specialists=True,
                          specialist_steps={"rewards": 3})
    _commit, stopped = math_bench.implement(tight, h, sandbox, k=1)
    assert not stopped.ok and stopped.reason.startswith("coder stopped"), stopped.reason
    steps = [e for e in read_events(tmp_path / "tight" / "transcripts" / "g0-c1-coder-rewards.jsonl")
             if e["type"] == "tool"]
    assert len(steps) <= 3 + 2, "the specialist's own budget (3), not max_coder_steps (20)"


def test_an_unknown_surface_goes_to_the_generalist_instead_of_failing_the_diagnosis() -> None:
    h = Hypothesis.model_validate({**strict_answer_hypothesis().model_dump(), "surface": "everything"})
    assert h.surface is None


def test_a_coder_analyses_with_python_and_its_python_edits_are_tracked(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("coder_python")
    h = strict_answer_hypothesis().model_copy(update={"title": "Count before editing"})
    commit, outcome = math_bench.implement(make_proposer(server, tmp_path / "run"), h, sandbox)
    assert server.errors == []
    assert outcome.ok and commit is not None, outcome.reason
    tools = [e for e in read_events(tmp_path / "run" / "transcripts" / "g0-c0-coder.jsonl") if e["type"] == "tool"]
    assert [t["name"] for t in tools] == ["run_python", "run_python", "commit"]
    assert tools[0]["result"].startswith("['correctness'] ") and tools[0]["result"].rstrip().endswith(" tests")
    assert "[it changed harness/math/rewards.py: tracked as edits]" in tools[1]["result"]
    assert tools[2]["ok"] and tools[2]["result"].startswith("committed"), "selftest passed on the edited files"
    assert math_bench.repo.git.diff("--name-only", math_bench.main, commit).split() == ["harness/math/rewards.py"]
