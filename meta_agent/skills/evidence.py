"""The evidence loop: every backtest of a skill is recorded on it; a skill that keeps losing in a domain
retires in that domain only (it stays active for the others)."""

from __future__ import annotations

from typing import Literal

from meta_agent.skills.model import Evidence
from meta_agent.skills.runner import ALREADY_APPLIED
from meta_agent.skills.store import SkillSet
from meta_agent.verdicts import Verdict


def evidence_verdict(v: Verdict) -> Literal["promoted", "rejected", "not_applicable"]:
    """How a candidate's verdict counts for the skills it used: a harness that already had the change
    (`AlreadyApplied`) tested nothing, so that is neither a win nor a loss."""
    if v.stage == "implement" and v.reason.startswith(ALREADY_APPLIED):
        return "not_applicable"
    return "promoted" if v.promoted else "rejected"


def record(skills: SkillSet, name: str, evidence: Evidence, retire_after: int) -> bool:
    """Append `evidence` (once per run and commit) to the skill; returns True if this retired it in
    `evidence.domain` (its last `retire_after` applicable tests there all lost)."""
    skill = skills.get(name)
    meta = skill.meta
    same = [e for e in meta.evidence if e.run == evidence.run and e.commit == evidence.commit]
    if same:  # recorded before a kill, the step not journaled: the same answer as the first time
        return same[0].retired_it
    domain = evidence.domain
    recent = [e for e in [*meta.evidence, evidence] if e.domain == domain and e.applicable][-retire_after:]
    retired = (evidence.applicable and meta.active_in(domain) and len(recent) == retire_after
               and not any(e.won for e in recent))
    meta.evidence.append(evidence.model_copy(update={"retired_it": retired}))
    if retired:
        meta.retired_in.append(domain)
    skills.save(skill)
    return retired


def set_status(skills: SkillSet, name: str, retired: bool, domain: str | None = None) -> None:
    """Retire or re-activate a skill by hand (`meta-agent skills retire NAME [--domain D] [--undo]`):
    in one domain, or everywhere when no domain is given."""
    skill = skills.get(name)
    meta = skill.meta
    if domain is None:
        meta.status = "retired" if retired else "active"
        if not retired:
            meta.retired_in = []
    elif retired and domain not in meta.retired_in:
        meta.retired_in.append(domain)
    elif not retired:
        meta.retired_in = [d for d in meta.retired_in if d != domain]
    skills.save(skill)
