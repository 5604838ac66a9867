"""End to end: `meta-agent evolve --proposer llm` on the tiny policy against the replay server.

The diagnostician, two coders and the skill writer are recorded sessions; everything else is real:
training, the sandbox, the backtest cascade, the gate, the merge. One candidate closes the math reward
hole (promoted on replay evidence), the other needs a protected file and gives up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest

from meta_agent.eventlog import EventLog
from meta_agent.gitops import trailers
from meta_agent.journal import EVENT_TYPES, Proposed
from meta_agent.llm.accounting import Ledger
from meta_agent.llm.transcript import render
from meta_agent.skills.store import load_skill
from tests.conftest import journal
from tests.evolve.conftest import meta_agent, tiny_config
from tests.llm.conftest import CONVERSATIONS
from tests.llm.replay_server import ReplayServer, Scenario

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`

E2E = ("e2e_diagnosis", "coder_strict_answer", "coder_protected", "skill_writer")


def llm_config(run_dir: Path, server: ReplayServer, **overrides: Any) -> Path:
    return tiny_config(run_dir, generations=1, candidates=2, noise_reruns=0, skills=[], proposer="llm",
                       llm={"model": "openai/replay", "api_base": server.api_base}, **overrides)


def load_e2e(server: ReplayServer) -> None:
    server.load(Scenario.load(*(CONVERSATIONS / f"{n}.yaml" for n in E2E)))


def _data(run: Path, type_: str) -> list[dict[str, Any]]:
    return journal(run, EVENT_TYPES[type_])


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory: pytest.TempPathFactory, replay_server: ReplayServer) -> Path:
    run_dir = tmp_path_factory.mktemp("evolve-llm") / "e2e"
    load_e2e(replay_server)
    res = meta_agent("evolve", "--config", str(llm_config(run_dir, replay_server)), data_dir=run_dir.parent / "data")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert replay_server.errors == []
    (run_dir.parent / "evolve.out").write_text(res.stdout)
    return run_dir


def test_the_llm_proposer_produces_a_merged_winner_with_the_trailers(llm_run: Path) -> None:
    repo = git.Repo(llm_run / "harness")
    created = {c["k"]: c for c in _data(llm_run, "candidate_created")}
    winner = created[0]
    assert winner["ok"] and winner["title"] == "Reward only one explicit final answer line"
    t = trailers(repo, winner["commit"])
    assert t["Skills-Used"] == "strict-final-answer" and t["Predicted-Effect"] == "probes_rewarded down"
    assert t["Hypothesis"].startswith("probes_rewarded: probes_rewarded 0.33")
    assert "LLM coder, 11 tool calls" in repo.commit(winner["commit"]).message
    [merged] = _data(llm_run, "merged")
    mt = trailers(repo, merged["merge_commit"])
    assert mt["Backtest"] == "implement=pass static=pass replay=pass train=pass"
    assert mt["Verdict"].startswith("promoted (validity)")
    assert merged["merge_commit"] == repo.commit("main").hexsha
    assert "exactly one distinct 'Answer: N' value" in repo.git.show("main:harness/math/rewards.py")


def test_the_candidate_that_needs_a_protected_file_is_rejected_with_the_coders_reason(llm_run: Path) -> None:
    verdicts = {v["title"]: v for v in _data(llm_run, "verdict")}
    loser = verdicts["Log the verifier verdict beside each rollout"]
    assert loser["verdict"] == "rejected" and loser["stage"] == "implement"
    assert loser["reason"].startswith("coder gave up: the verdict would have to be written by harness/io.py")
    assert "cand/e2e/0-1" not in [h.name for h in git.Repo(llm_run / "harness").heads]


def test_the_skill_writer_adds_a_skill_to_the_run_and_user_libraries(llm_run: Path) -> None:
    [written] = [s for s in _data(llm_run, "skill_written") if s["skill"]]
    assert written["skill"] == "probe-regression-tests"
    skill = load_skill(llm_run / "skills" / "probe-regression-tests")
    assert skill.meta.provenance["source"] == "llm" and skill.meta.provenance["candidate"] == "e2e/0-0"
    assert (llm_run.parent / "data" / "skills" / "probe-regression-tests" / "apply.py").is_file()
    trial = llm_run / "gen-000" / "cand-0" / "skill-trial" / "harness"
    assert trial.is_dir(), "published only after its apply.py was tried on a fresh harness"
    assert "ANSWER_LINE.findall" in git.Repo(trial).git.show("trial:harness/math/rewards.py")


def test_transcripts_and_usage_account_for_every_call(llm_run: Path) -> None:
    names = sorted(p.name for p in (llm_run / "transcripts").iterdir())
    assert names == ["g0-c0-coder.jsonl", "g0-c0-skill-writer.jsonl", "g0-c1-coder.jsonl", "g0-diagnostician.jsonl"]
    text = render(llm_run / "transcripts" / "g0-diagnostician.jsonl")
    assert "-> submit_hypotheses(" in text and "=== end: ok:" in text
    usage = Ledger(llm_run / "llm-usage.json").state
    assert {a: u.calls for a, u in usage.by_agent.items()} == {"diagnostician": 2, "coder": 13, "skill writer": 1}
    assert usage.by_scope["g0"].calls == usage.total.calls == 16
    summary = json.loads((llm_run / "summary.json").read_text())
    # (listed as decided: the winner's own training now comes after the other's rejection at implement)
    assert {c["cand_id"]: c["verdict"] for c in summary["candidates"]} == {"e2e/0-0": "promoted",
                                                                           "e2e/0-1": "rejected"}


def test_the_llm_sessions_show_their_calls_and_tokens_as_they_go(llm_run: Path) -> None:
    """Not on a terminal, each change of the run's LLM usage is one progress line; the last one is the total."""
    lines = [line.strip() for line in (llm_run.parent / "evolve.out").read_text().splitlines()
             if line.strip().startswith("LLM ")]
    total = Ledger(llm_run / "llm-usage.json").state.total
    assert lines, "no LLM progress line"
    assert lines[-1].startswith(f"LLM {total.calls} calls") and f"{total.tokens:,} tokens" in lines[-1], lines


def test_a_budget_that_runs_out_mid_generation_stops_cleanly_and_resumes(
        tmp_path: Path, replay_server: ReplayServer, llm_run: Path) -> None:
    diagnosis = Ledger(llm_run / "llm-usage.json").state.by_agent["diagnostician"].tokens
    run = tmp_path / "budget"
    load_e2e(replay_server)
    cfg = llm_config(run, replay_server, budget={"llm_tokens": diagnosis + 500})
    # Scripted training (tests/scripted_harness): what is tested is the budget's stop and the resume, and the
    # recorded sessions match by agent and prompt, not by the numbers a real GRPO run would report (~55 s saved).
    res = meta_agent("evolve", "--config", str(cfg), data_dir=tmp_path / "data", scripted=True)
    assert res.returncode == 3, res.stdout[-3000:] + res.stderr[-3000:]
    out = " ".join(res.stdout.split())
    assert "LLM token budget" in out and f"meta-agent resume {run}" in out
    log = EventLog(run)
    assert log.finished("g0/propose"), "the diagnosis finished and is kept"
    assert not log.finished("g0/c0/created"), "the interrupted candidate is not journaled"
    assert not git.Repo(run / "harness").is_dirty()

    res = meta_agent("resume", str(run), data_dir=tmp_path / "data", scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert replay_server.errors == []
    assert [m["cand_id"] for m in _data(run, "merged")] == ["budget/0-0"]
    assert Ledger(run / "llm-usage.json").state.by_agent["diagnostician"].calls == 2, "the diagnosis was not redone"


def test_a_second_project_retrieves_the_skill_learned_in_the_first(llm_run: Path, tmp_path: Path) -> None:
    """Project A's skill writer put a skill into the user library; project B (its own harness repo, the
    offline skills proposer) finds it there and proposes it when its report matches the skill's trigger."""
    run_b = tmp_path / "project-b"
    config = tiny_config(run_b, generations=1, candidates=2, noise_reruns=0, control="none", skills=[])
    res = meta_agent("evolve", "--config", str(config), data_dir=llm_run.parent / "data")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert git.Repo(run_b / "harness").working_dir != git.Repo(llm_run / "harness").working_dir
    [proposal] = journal(run_b, Proposed)
    used = [h["skills_used"] for h in proposal["hypotheses"]]
    assert ["probe-regression-tests"] in used, used
