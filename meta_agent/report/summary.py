"""The end-of-run summary: per generation the policy's selection score and what happened to each
candidate (promoted and why, rejected and at which stage), then evolved vs static on the test split.

`summary.json` is the data (a `RunSummary`); `summary.md` is rendered from a template, and the
CLI prints that same markdown, so the two never disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from meta_agent.candidate_fold import fold_candidates
from meta_agent.eventlog import EventLog
from meta_agent.fsutil import atomic_write_text
from meta_agent.journal import GenerationDone
from meta_agent.report.render import template


class CandidateLine(BaseModel):
    cand_id: str
    title: str
    kind: str
    skills: list[str]
    verdict: str
    stage: str
    reason: str
    delta: float | None = None
    ci: list[float] | None = None
    branch: str = ""
    commit: str | None = None
    parent: str | None = None
    """The archived candidate it was built on (`archive_parents`): a merge of it brings that change too."""


class RunSummary(BaseModel):
    generations: list[GenerationDone]
    candidates: list[CandidateLine]
    final: dict[str, Any] = Field(default_factory=dict)


def collect(log: EventLog, final: dict[str, Any] | None) -> RunSummary:
    decided = sorted((s for s in fold_candidates(log).values() if s.verdict is not None),
                     key=lambda s: s.verdict_order or 0)  # in the order they were decided
    candidates = []
    for s in decided:
        v, c = s.verdict, s.created
        assert v is not None
        candidates.append(CandidateLine(
            cand_id=v.cand_id, title=v.title or c.title, kind=v.kind, skills=v.skills, verdict=v.verdict,
            stage=v.stage, reason=v.reason, delta=v.delta, ci=v.ci, branch=c.branch, commit=c.commit,
            parent=c.parent))
    return RunSummary(generations=log.of_type(GenerationDone), candidates=candidates, final=final or {})


def _score(s: dict[str, Any] | None) -> str:
    return "n/a" if not s else f"{s['mean']:.3f} [{s['low']:.3f}, {s['high']:.3f}] (n={s['n']})"


def render_markdown(summary: RunSummary) -> str:
    return template("summary.md.j2").render(s=summary, score=_score)


def write_summary(run_dir: Path, log: EventLog, final: dict[str, Any] | None) -> RunSummary:
    summary = collect(log, final)
    atomic_write_text(run_dir / "summary.json", summary.model_dump_json(indent=2))
    atomic_write_text(run_dir / "summary.md", render_markdown(summary))
    return summary
