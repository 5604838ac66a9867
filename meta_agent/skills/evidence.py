"""The evidence loop: every backtest of a skill is recorded on it; a skill that keeps losing retires."""

from __future__ import annotations

from meta_agent.skills.model import Evidence
from meta_agent.skills.store import SkillSet


def record(skills: SkillSet, name: str, evidence: Evidence, retire_after: int) -> bool:
    """Append `evidence` (once per run and commit) to the skill; returns True if this retired it."""
    skill = skills.get(name)
    meta = skill.meta
    if any(e.run == evidence.run and e.commit == evidence.commit for e in meta.evidence):
        return False
    meta.evidence.append(evidence)
    recent = meta.evidence[-retire_after:]
    retired = (meta.status == "active" and len(recent) == retire_after and not any(e.won for e in recent))
    if retired:
        meta.status = "retired"
    skills.save(skill)
    return retired


def set_status(skills: SkillSet, name: str, status: str) -> None:
    """Retire or re-activate a skill by hand (`meta-agent skills retire NAME [--undo]`)."""
    skill = skills.get(name)
    skill.meta.status = status  # type: ignore[assignment]
    skills.save(skill)
