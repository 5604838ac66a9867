"""What the lineage page shows, gathered from a run's journal: per generation main's selection score and
every candidate (hypothesis, kinds, stage reached, verdict, delta with CI, merge), then the final
comparison. Read-only: the journal is opened with repair=False.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from meta_agent.candidate_fold import CandidateState, fold_candidates
from meta_agent.eventlog import EventLog, require_run
from meta_agent.hypothesis import Hypothesis
from meta_agent.journal import (
    FinalEval,
    GenerationDone,
    Proposed,
    RunDone,
    RunStarted,
)
from meta_agent.journal_keys import cand_dir, gen_dir, generation_of
from meta_agent.runinfo import read_run_info


class CandidateNode(BaseModel):
    cand_id: str
    gen: int
    k: int
    title: str
    hypothesis: str
    """failure mode and intervention, as the proposer wrote them (untrusted text)."""
    declared_kind: str
    measured_kind: str | None
    stage: str
    """the last stage it reached (the deciding one once it has a verdict)."""
    verdict: str
    """promoted, rejected, conflict, not implemented, or running."""
    reason: str
    delta: float | None
    ci: list[float] | None
    merged: bool
    combined: str | None
    report: str | None
    """relative link to its training backtest's report.html, where one exists."""


class GenerationNode(BaseModel):
    gen: int
    score: float | None
    low: float | None
    high: float | None
    noise_floor: float | None
    dominant: list[str]
    main_after: str | None
    report: str | None
    candidates: list[CandidateNode]


class RunningNow(BaseModel):
    """What the run's process is doing (RUN/live.json), for an unfinished run's page."""

    alive: bool
    phase: str
    detail: str
    minutes: int
    """How long the phase has run (alive) or how long ago the process was last seen (stopped)."""
    steps_done: int
    steps_total: int
    eta_minutes: int | None
    generation_eta_minutes: int | None
    ended: str | None
    run_dir: str


def running_now(run_dir: Path) -> RunningNow | None:
    import time

    from meta_agent.evolve.live import is_alive, read_live

    live = read_live(run_dir)
    if live is None:
        return None
    alive = is_alive(live)
    since = live.phase_since if alive else live.updated
    eta = round(live.eta_seconds / 60) if alive and live.eta_seconds is not None else None
    gen_eta = round(live.generation_eta_seconds / 60) if alive and live.generation_eta_seconds is not None else None
    return RunningNow(alive=alive, phase=live.phase, detail=live.detail, minutes=int((time.time() - since) // 60),
                      steps_done=live.steps_done, steps_total=live.steps_total, eta_minutes=eta,
                      generation_eta_minutes=gen_eta, ended=live.ended, run_dir=str(run_dir))


class LineageView(BaseModel):
    run_id: str
    domain: str
    harness: str
    started: str
    finished: bool
    generations: list[GenerationNode]
    final: dict[str, Any]
    """evolved / static / paired intervals on the test split (empty until the run finished)."""
    noise_floor: float | None
    now: RunningNow | None = None
    """Set while the run is not finished and its process has said what it does."""

    @property
    def candidate_count(self) -> int:
        return sum(len(g.candidates) for g in self.generations)


def _link(target: Path, page_dir: Path) -> str | None:
    return quote(os.path.relpath(target, page_dir)) if target.is_file() else None


def _hypotheses(log: EventLog) -> dict[int, list[Hypothesis]]:
    out = {}
    for record in log.records:
        if isinstance(record.event, Proposed) and record.key and record.key.endswith("/propose"):
            g = generation_of(record.key)
            if g is not None:
                out[g] = record.event.hypotheses
    return out


def _hypothesis_text(h: Hypothesis | None) -> str:
    if not h:
        return ""
    parts = [f"{h.failure_mode}: {h.evidence}".strip(": "), h.intervention]
    return " → ".join(p for p in parts if p)


def _candidate(state: CandidateState, run_dir: Path, page_dir: Path, hyps: dict[int, list[Hypothesis]]
               ) -> CandidateNode:
    c, v, stages = state.created, state.verdict, state.stages
    generation = hyps.get(c.gen, [])
    train_report = run_dir / gen_dir(c.gen) / cand_dir(c.k) / "train" / "report.html"
    verdict: str
    stage: str
    if v is not None:
        verdict, stage, reason = v.verdict, v.stage, v.reason
    elif not c.ok:
        verdict, stage, reason = "not implemented", "implement", c.reason
    else:
        verdict, stage, reason = "running", stages[-1].stage if stages else "implement", ""
    return CandidateNode(
        cand_id=c.cand_id, gen=c.gen, k=c.k, title=c.title,
        hypothesis=_hypothesis_text(generation[c.k] if c.k < len(generation) else None),
        declared_kind=(v.declared_kind if v and v.declared_kind else c.kind), measured_kind=v.kind if v else None,
        stage=stage, verdict=verdict, reason=reason, delta=v.delta if v else None, ci=v.ci if v else None,
        merged=state.merge_commit is not None, combined=state.combined,
        report=_link(train_report, page_dir))


def collect_lineage(run_dir: Path, page_dir: Path) -> LineageView:
    """The page's data for the run in `run_dir`; links are relative to `page_dir` (where the page goes)."""
    require_run(run_dir)
    log = EventLog(run_dir, repair=False)
    started = log.of_type(RunStarted)
    info = read_run_info(run_dir)
    hyps = _hypotheses(log)
    done = {g.gen: g for g in log.of_type(GenerationDone)}
    created = fold_candidates(log)
    gens = sorted(set(done) | {c.created.gen for c in created.values()})
    generations = []
    for g in gens:
        d = done.get(g)
        generations.append(GenerationNode(
            gen=g, score=d.control_score if d else None, low=d.control_low if d else None,
            high=d.control_high if d else None, noise_floor=d.noise_floor if d else None,
            dominant=d.dominant if d else [], main_after=d.main_after if d else None,
            report=_link(run_dir / gen_dir(g) / "main" / "report.html", page_dir),
            candidates=sorted((_candidate(c, run_dir, page_dir, hyps) for c in created.values() if c.created.gen == g),
                              key=lambda n: n.k)))
    finals = log.of_type(FinalEval)
    final = finals[-1].model_dump(mode="json", exclude_none=True) if finals else _summary_final(run_dir)
    floors = [g.noise_floor for g in generations if g.noise_floor is not None]
    return LineageView(
        run_id=started[0].run_id if started else run_dir.name, domain=info.domain, harness=info.harness,
        started=started[0].started if started else info.created, finished=bool(log.of_type(RunDone)),
        generations=generations, final=final, noise_floor=floors[-1] if floors else None,
        now=None if log.of_type(RunDone) else running_now(run_dir))


def _summary_final(run_dir: Path) -> dict[str, Any]:
    """summary.json's final comparison, for a run whose journal predates the final_eval event."""
    path = run_dir / "summary.json"
    if not path.is_file():
        return {}
    final = json.loads(path.read_text()).get("final") or {}
    return final if isinstance(final, dict) else {}
