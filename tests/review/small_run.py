"""A small real evolve run without training: a harness repo whose candidates are committed, noted and
merged by meta-agent's own git and journal code, as the loop does, with verdicts given by the test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from meta_agent.agents.base import Hypothesis
from meta_agent.contract import RolloutRecord
from meta_agent.eventlog import EventLog
from meta_agent.evolve.candidate import note_for
from meta_agent.gitops import add_note, commit_dir, export_tree, format_message, init_harness, merge_no_ff
from meta_agent.journal import (
    CandidateCreated,
    Merged,
    Proposed,
    RunDone,
    RunStarted,
    StageDone,
    VerdictRecorded,
)
from meta_agent.runinfo import RunInfo, write_run_info
from meta_agent.training import VERIFIED
from meta_agent.verdicts import StageResult, Verdict
from meta_agent.workspace import candidate_trailers

RUN_ID = "20261122-100000-evolve-math"


@dataclass
class Plan:
    """One candidate: its slot, whether it wins, and at which stage a loser fails."""

    g: int
    k: int
    promoted: bool
    fails_at: str = "train"
    title: str = ""
    """the hypothesis title (default: a plain one naming the slot)."""


def _hypothesis(p: Plan) -> Hypothesis:
    return Hypothesis(
        title=p.title or f"Shape reward g{p.g} c{p.k}", failure_mode="truncated",
        evidence=f"42% truncated in gen {p.g}",
        evidence_rollouts=[f"r-{p.g}-{p.k}", "r-missing"], intervention=f"cap the length, variant {p.k}",
        kind="performance", skills_used=["overlong-shaping"])


def _stages(p: Plan) -> list[StageResult]:
    stages = [StageResult(stage="static", passed=True, reason="selftest passed", seconds=1.5)]
    stages.append(StageResult(stage="replay", passed=p.fails_at != "replay", seconds=2.0,
                              reason="probes rewarded less" if p.fails_at != "replay" else "probe p1 rewarded more",
                              metrics={"measured_kind": "performance", "probes_rewarded": 0.0}))
    if p.fails_at != "replay":
        delta = 0.12 if p.promoted else -0.04
        stages.append(StageResult(stage="train", passed=True, reason="trained", seconds=30.0,
                                  metrics={"delta": delta, "ci": [delta - 0.05, delta + 0.05], "score": 0.5 + delta}))
    return stages


def build(root: Path, plans: list[Plan], finished: bool = True, run_id: str = RUN_ID,
          harness: Path | None = None) -> tuple[Path, git.Repo]:
    """A run directory and its harness repo holding the candidates of `plans` (generation by generation)."""
    repo = git.Repo(harness) if harness is not None else init_harness(root / "harness", "math")
    run_dir = root / "runs" / run_id
    run_dir.mkdir(parents=True)
    write_run_info(run_dir, RunInfo(command="evolve", domain="math", harness=str(repo.working_dir), policy="tiny",
                                    created="2026-11-22T10:00:00", settings={}))
    log = EventLog(run_dir)
    log.append(RunStarted(run_id=run_id, domain="math", harness=str(repo.working_dir), started="2026-11-22T10:00:00",
                          root_policy="tiny", initial_main=repo.commit("main").hexsha, epoch=0), key="start")
    for g in sorted({p.g for p in plans}):
        here = [p for p in plans if p.g == g]
        log.append(Proposed(hypotheses=[_hypothesis(p).model_dump(mode="json") for p in here]), key=f"g{g}/propose")
        main_dir = run_dir / f"gen-{g:03d}" / "main"
        main_dir.mkdir(parents=True)
        (main_dir / VERIFIED).write_text("".join(RolloutRecord(
            rollout_id=f"r-{g}-{p.k}", step=0, task_id="t1", group_id="g1", prompt="2+2?", completion="4 " * 300,
            rewards={"correct": 1.0}, reward=0.25, advantage=0.0, prompt_tokens=3, completion_tokens=300,
            truncated=True, labels=["truncated"], harness_commit="x", verified=False).model_dump_json() + "\n"
            for p in here))
        base = repo.commit("main").hexsha
        for p in here:
            _candidate(repo, log, run_dir, run_id, base, p)
    if finished:
        log.append(RunDone(run_id=run_id, final_main=repo.commit("main").hexsha), key="done")
    return run_dir, repo


def _candidate(repo: git.Repo, log: EventLog, run_dir: Path, run_id: str, base: str, p: Plan) -> None:
    h, cand_id = _hypothesis(p), f"{run_id}/{p.g}-{p.k}"
    branch, key = f"cand/{cand_id}", f"g{p.g}/c{p.k}"
    work = export_tree(repo, base, run_dir / "work")
    (work / "harness" / f"cap_{p.g}_{p.k}.txt").write_text(f"max_completion_length: {100 + p.k}\n")
    commit = commit_dir(repo, work, base, branch, format_message(h.title, h.intervention,
                                                                 candidate_trailers(h, cand_id)))
    log.append(CandidateCreated(cand_id=cand_id, run_id=run_id, gen=p.g, k=p.k, branch=branch, commit=commit,
                                ok=True, reason="", title=h.title, kind=h.kind, skills=h.skills_used),
               key=f"{key}/created")
    stages = _stages(p)
    for s in stages:
        log.append(StageDone(cand_id=cand_id, **s.model_dump()), key=f"{key}/{s.stage}")
    train = stages[-1].metrics if stages[-1].stage == "train" else {}
    verdict = Verdict(cand_id=cand_id, verdict="promoted" if p.promoted else "rejected",
                      stage="gate" if p.fails_at != "replay" else "replay",
                      reason="CI above the noise floor" if p.promoted else
                      ("probe p1 rewarded more" if p.fails_at == "replay" else "CI includes 0"),
                      kind="performance", declared_kind="performance", delta=train.get("delta"), ci=train.get("ci"))
    add_note(repo, commit, note_for(verdict, log))
    log.append(VerdictRecorded(**verdict.model_dump(), title=h.title, skills=h.skills_used), key=f"{key}/verdict")
    if p.promoted:
        msg = format_message(f"Merge {branch}: {h.title}", "", {"Backtest": "static=pass replay=pass train=pass",
                                                                 "Verdict": f"promoted (performance): {verdict.reason}",
                                                                 "Candidate": cand_id})
        merge = merge_no_ff(repo, branch, msg)
        add_note(repo, merge, note_for(verdict, log))
        log.append(Merged(cand_id=cand_id, merge_commit=merge, branch=branch), key=f"g{p.g}/merge/c{p.k}")
