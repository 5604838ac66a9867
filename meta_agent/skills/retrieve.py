"""Ranking skills for a rollout report: trigger matches first, then text similarity (BM25) and the
skill's record in the report's domain; and rendering the top skills into a prompt within a token budget."""

from __future__ import annotations

import re
from dataclasses import dataclass

from meta_agent.report.rollout_report import RolloutReport
from meta_agent.skills.model import Trigger
from meta_agent.skills.store import Skill, SkillSet
from meta_agent.tokens import approx_tokens


@dataclass
class Ranked:
    skill: Skill
    trigger_score: float
    """Sum over matched triggers (a label trigger scores its share, a metric trigger 1)."""
    text_score: float
    matched: list[str]
    domain: str = ""
    """The report's domain, where the record below comes from."""
    evidence_score: float = 0.0
    """Win rate in the domain under a uniform prior, centred: 0 with no record, up to +-0.5."""

    @property
    def score(self) -> float:
        return 10 * self.trigger_score + self.text_score + EVIDENCE_WEIGHT * self.evidence_score


EVIDENCE_WEIGHT = 4.0
"""A record of 3 wins (+1.2) or 3 losses (-1.2) reorders skills of equal triggers and similar text; a fully
matched trigger (10) still outweighs any record (at most +-2)."""


def evidence_score(skill: Skill, domain: str) -> float:
    """Posterior mean win rate with a Beta(1, 1) prior, minus 1/2: a new skill is neither favoured nor
    penalised, and one test moves it less than many."""
    wins, tests = skill.meta.record(domain)
    return (wins + 1) / (tests + 2) - 0.5


def _words(text: str) -> str:
    return re.sub(r"[_\-]+", " ", text.lower())


def trigger_match(t: Trigger, report: RolloutReport) -> float:
    if t.label is not None:
        share = report.label_share(t.label)
        return share if share >= t.min_share and share > 0 else 0.0
    value = getattr(report, t.metric or "", None)
    if not isinstance(value, int | float):
        return 0.0
    ok = (t.above is None or value > t.above) and (t.below is None or value < t.below)
    return 1.0 if ok else 0.0


def skill_text(skill: Skill) -> str:
    triggers = " ".join(t.label or t.metric or "" for t in skill.meta.triggers)
    return _words(f"{skill.name} {skill.meta.description} {triggers} {skill.body}")


def report_query(report: RolloutReport) -> str:
    labels = " ".join(s.label for s in report.labels)
    return _words(f"{' '.join(report.dominant)} {labels} {report.domain}")


def _bm25(docs: list[str], query: str) -> list[float]:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, show_progress=False), show_progress=False)
    ids, scores = retriever.retrieve(bm25s.tokenize([query], show_progress=False), k=len(docs), show_progress=False)
    by_doc = dict(zip(ids[0].tolist(), scores[0].tolist(), strict=True))
    return [float(by_doc.get(i, 0.0)) for i in range(len(docs))]


def rank(skills: SkillSet, report: RolloutReport, *, query: str | None = None) -> list[Ranked]:
    """Active skills for the report's domain, best first; ties broken by name for determinism."""
    pool = [s for s in skills.all() if s.meta.active_in(report.domain)]
    if not pool:
        return []
    text = _bm25([skill_text(s) for s in pool], _words(query) if query else report_query(report))
    ranked = []
    for skill, ts in zip(pool, text, strict=True):
        matches = [(t, trigger_match(t, report)) for t in skill.meta.triggers]
        ranked.append(Ranked(skill=skill, trigger_score=sum(m for _, m in matches), text_score=ts,
                             matched=[t.describe() for t, m in matches if m > 0],
                             domain=report.domain, evidence_score=evidence_score(skill, report.domain)))
    ranked.sort(key=lambda r: (-r.score, r.skill.name))
    return ranked


def render_for_prompt(ranked: list[Ranked], budget_tokens: int) -> str:
    """The top skills as markdown, whole skills only, within `budget_tokens` (approximate)."""
    out: list[str] = []
    used = 0
    for r in ranked:
        m = r.skill.meta
        wins, tests = m.record(r.domain)
        block = (f"### skill `{m.name}` ({m.kind})\n{m.description}\n"
                 f"Triggers matched: {', '.join(r.matched) or 'none'}. Evidence in {r.domain}: {wins} wins / "
                 f"{tests} tests.\n\n{r.skill.body.strip()}\n")
        cost = approx_tokens(block)
        if used + cost > budget_tokens:
            continue
        out.append(block)
        used += cost
    return "\n".join(out)


def search(skills: SkillSet, query: str, domain: str | None = None) -> list[tuple[Skill, float]]:
    """Skills by text similarity to `query` (BM25 over name, description, triggers and body)."""
    pool = [s for s in skills.all() if domain is None or s.meta.applies_to(domain)]
    if not pool:
        return []
    scores = _bm25([skill_text(s) for s in pool], _words(query))
    return sorted(zip(pool, scores, strict=True), key=lambda p: (-p[1], p[0].name))
