"""The skill writer: after a verdict, turns the hypothesis, the diff and the measured outcome into a skill
folder (SKILL.md + optional apply.py), validated with the same loader the library uses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from meta_agent.agents.base import Outcome
from meta_agent.agents.prompts import load_prompt
from meta_agent.hypothesis import PredictedEffect
from meta_agent.journal_keys import CandidateId
from meta_agent.llm.agent_loop import AgentSession, run_tool_loop
from meta_agent.llm.client import LLMClient
from meta_agent.llm.errors import LLMRequestError
from meta_agent.llm.tools import Tool, ToolResult
from meta_agent.llm.transcript import Transcript
from meta_agent.skills.model import APPLY_FILE, DomainTag, SkillMeta, Trigger
from meta_agent.skills.skill_files import check_apply, write_skill_files
from meta_agent.skills.store import SkillError, SkillSet, load_skill

DIFF_CHARS = 12_000
MAX_STEPS = 4
WRITE_ATTEMPTS = 2
STAGING = ".staging"


class SkillDraft(BaseModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{1,63}$")
    description: str = Field(min_length=10)
    kind: Literal["validity", "performance"]
    domains: list[DomainTag] = Field(default_factory=lambda: list[DomainTag](["*"]))
    triggers: list[Trigger] = Field(default_factory=list)
    predicted_effects: list[PredictedEffect] = Field(default_factory=list)
    new_labels: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    when_to_apply: str
    how: str
    pitfalls: str
    example: str = ""
    apply_py: str | None = Field(None, description="source of apply.py, when the change can be replayed mechanically")


class SkipArgs(BaseModel):
    reason: str


def body_of(d: SkillDraft, outcome: Outcome) -> str:
    v = outcome.verdict
    sections = [("When to apply", d.when_to_apply), ("How", d.how), ("Pitfalls", d.pitfalls), ("Example", d.example),
                ("Evidence", f"{v.cand_id}: {v.verdict} at {v.stage} ({v.reason})")]
    return "\n\n".join(f"## {title}\n{text.strip()}" for title, text in sections if text.strip())


class SkillWriter:
    def __init__(self, client: LLMClient, transcripts: Path, skills: SkillSet) -> None:
        self.client = client
        self.transcripts = transcripts
        self.skills = skills

    def write(self, outcome: Outcome) -> Path | None:
        if not outcome.diff.strip():
            return None  # nothing was built: there is no change to learn from
        cand = outcome.verdict.cand_id
        try:
            k: object = CandidateId.parse(cand).k
        except ValueError:
            k = "x"
        stem = f"g{outcome.generation}-c{k}-skill-writer"
        transcript = Transcript(self.transcripts / f"{stem}.jsonl", agent="skill writer", model=self.client.model,
                                meta={"run": outcome.run_id, "candidate": cand})
        diff = outcome.diff if len(outcome.diff) <= DIFF_CHARS else outcome.diff[:DIFF_CHARS] + "\n[... diff cut ...]"
        user = load_prompt(
            "skill_writer_user", run_id=outcome.run_id, generation=outcome.generation,
            verdict=json.dumps(outcome.verdict.model_dump(mode="json")),
            hypothesis=outcome.hypothesis.model_dump_json(indent=2), diff=diff,
            skills="\n".join(f"- {s.name}: {s.meta.description}" for s in self.skills.all()) or "none")
        session = AgentSession(self.client, transcript, agent="skill writer", scope=f"g{outcome.generation}",
                               system=load_prompt("skill_writer_system"), user=user)
        attempts = 0

        def write_skill(d: SkillDraft) -> ToolResult:
            nonlocal attempts
            attempts += 1
            try:
                folder = self._save(d, outcome)
            except (SkillError, ValidationError, ValueError) as e:
                if attempts >= WRITE_ATTEMPTS:
                    return ToolResult(f"invalid skill again: {e}", ok=False, done=True, value=f"invalid skill: {e}")
                return ToolResult(f"invalid skill: {e}. Fix it and call write_skill again.", ok=False)
            return ToolResult(f"saved skill {d.name}", done=True, value=folder)

        tools = [Tool("write_skill", "Write (or revise) a skill. Ends the session.", SkillDraft, write_skill),
                 Tool("skip", "Write no skill, saying why. Ends the session.", SkipArgs,
                      lambda a: ToolResult("ok", done=True, value=f"skipped: {a.reason}"))]
        try:
            result = run_tool_loop(session, tools, max_steps=MAX_STEPS)
        except LLMRequestError as e:
            transcript.end(False, str(e))
            return None
        if result.finished and isinstance(result.value, Path):
            transcript.end(True, f"wrote {result.value}")
            return result.value
        transcript.end(False, result.value if result.finished else result.reason)
        return None

    def _save(self, d: SkillDraft, outcome: Outcome) -> Path:
        if d.apply_py is not None:
            problem = check_apply(d.apply_py)
            if problem:
                raise ValueError(problem)
        try:
            previous = self.skills.get(d.name).meta
        except KeyError:
            previous = None
        provenance = {"source": "llm", "run": outcome.run_id, "candidate": outcome.verdict.cand_id,
                      "verdict": outcome.verdict.verdict}
        if previous is not None:
            provenance["revises"] = d.name
        meta = SkillMeta(
            name=d.name, description=d.description, domains=d.domains, kind=d.kind,
            # a note without apply.py must not be picked by the offline proposer, which can only run apply.py
            triggers=d.triggers if d.apply_py else [],
            predicted_effects=[e.model_dump() for e in d.predicted_effects], params=d.params,
            new_labels=d.new_labels, provenance=provenance,
            evidence=list(previous.evidence) if previous is not None else [],
        )
        staging = outcome.skills_dir / STAGING / d.name
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        write_skill_files(staging, meta, body_of(d, outcome))
        if d.apply_py is not None:
            (staging / APPLY_FILE).write_text(d.apply_py.rstrip() + "\n", encoding="utf-8")
        load_skill(staging)
        final = outcome.skills_dir / d.name
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
        return final
