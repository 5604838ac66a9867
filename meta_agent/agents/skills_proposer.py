"""The offline proposer: applies active skills whose triggers match the report's failure modes.

Rule-based and deterministic for a seed; it says so in every hypothesis it writes.
"""

from __future__ import annotations

import random
from pathlib import Path

from meta_agent.agents.base import Hypothesis, Implementation, Outcome, PredictedEffect, ProposalContext, Workspace
from meta_agent.config import EvolveConfig
from meta_agent.report.rollout_report import RolloutReport
from meta_agent.skills.retrieve import Ranked, rank
from meta_agent.skills.runner import run_apply
from meta_agent.skills.store import SkillSet


def _evidence(ranked: Ranked, report: RolloutReport) -> tuple[str, list[str], str]:
    """(evidence text with numbers, example rollout ids, the failure mode it is about)."""
    parts, rollouts, mode = [], [], ""
    for t in ranked.skill.meta.triggers:
        if t.label:
            stat = next((s for s in report.labels if s.label == t.label), None)
            if stat is None or stat.share < t.min_share:
                continue
            ids = [e.rollout_id for e in stat.exemplars]
            rollouts += ids
            parts.append(f"label {t.label} on {stat.count}/{report.rollouts} rollouts ({stat.share:.0%}), "
                         f"e.g. {', '.join(ids)}")
            mode = mode or t.label
        else:
            value = getattr(report, t.metric or "", None)
            parts.append(f"{t.metric} = {value:.3f} ({t.describe()})" if isinstance(value, float) else t.describe())
            mode = mode or (t.metric or "")
    return "; ".join(parts), rollouts, mode


class SkillsProposer:
    """Matches report triggers to skills; implements a hypothesis by running the skill's apply.py."""

    name = "skills"

    def __init__(self, skills: SkillSet, seed: int = 0) -> None:
        self.skills = skills
        self.seed = seed

    @classmethod
    def from_config(cls, cfg: EvolveConfig, skills: SkillSet, run_dir: Path) -> SkillsProposer:
        return cls(skills=skills, seed=cfg.seed)

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        tried = {s for h in ctx.history if h.get("verdict") in ("promoted", "rejected") for s in h.get("skills", [])}
        pool = [r for r in rank(self.skills, ctx.report) if r.trigger_score > 0 and r.skill.name not in tried]
        # Seeded shuffle, then a stable sort: equal scores come out in a seed-determined order.
        # Validity first: fix what the reward measures before optimising against it.
        random.Random(self.seed + ctx.generation).shuffle(pool)
        pool.sort(key=lambda r: (r.skill.meta.kind != "validity", -r.score))
        out = []
        for r in pool[:k]:
            m = r.skill.meta
            evidence, rollouts, mode = _evidence(r, ctx.report)
            out.append(Hypothesis(
                title=f"Apply skill {m.name}"[:100],
                failure_mode=mode,
                evidence=f"{evidence}. Chosen by the offline skills proposer (rule-based trigger match, "
                         f"score {r.score:.2f}).",
                evidence_rollouts=rollouts,
                intervention=m.description,
                kind=m.kind,
                predicted_effects=[PredictedEffect.model_validate(e) for e in m.predicted_effects],
                skills_used=[m.name],
                new_labels=list(m.new_labels),
                params=dict(m.params),
            ))
        return out

    def learn(self, outcome: Outcome) -> Path | None:
        """Rule-based: the skills it applies already get their evidence from the loop; it writes no new ones."""
        return None

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        if not hypothesis.skills_used:
            return Implementation(ok=False, reason="the skills proposer implements only skill-based hypotheses")
        skill = self.skills.get(hypothesis.skills_used[0])
        outcome = run_apply(workspace.session, workspace.kit_dir, skill, workspace.path, hypothesis.params)
        return Implementation(ok=outcome.ok, summary=outcome.summary, reason=outcome.reason)
