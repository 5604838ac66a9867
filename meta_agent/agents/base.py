"""The Proposer protocol and the typed hypothesis it yields."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel, Field, field_validator

from meta_agent.report.rollout_report import RolloutReport
from meta_agent.skills.store import SkillSet
from sandboxes import Sandbox, Session

Surface = Literal["rewards", "filters", "rl_settings", "prompts", "diagnostics"]
SURFACES: tuple[str, ...] = get_args(Surface)


class PredictedEffect(BaseModel):
    metric: str = Field(description="a report metric or label, e.g. zero_variance_frac, selection_accuracy")
    direction: Literal["up", "down"]


class Hypothesis(BaseModel):
    """One diagnosed failure mode and the intervention meant to fix it."""

    title: str = Field(max_length=100, description="one line; becomes the commit title")
    failure_mode: str = Field(description="the diagnostic label or metric the hypothesis is about")
    evidence: str = Field(description="numbers from the report and example rollout ids")
    evidence_rollouts: list[str] = Field(default_factory=list)
    intervention: str = Field(description="what to change in the harness, concretely")
    kind: Literal["validity", "performance"] = Field(
        description="validity: closes a reward hole or adds a diagnostic (replay evidence suffices); "
        "performance: shaping, filters, curriculum, RL settings (needs the train stage)"
    )
    predicted_effects: list[PredictedEffect] = Field(default_factory=list)
    skills_used: list[str] = Field(default_factory=list)
    new_labels: list[str] = Field(default_factory=list, description="diagnostic labels the change adds")
    surface: Surface | None = Field(None, description="the part of the harness it changes: rewards, filters (and "
                                                      "curriculum), rl_settings, prompts or diagnostics; with "
                                                      "llm.specialists on, the coder of that surface implements it")
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("surface", mode="before")
    @classmethod
    def _known_surface(cls, value: object) -> object:
        """An unknown surface routes to the generalist coder rather than failing the whole diagnosis."""
        return value if value in SURFACES else None

    def predicted_text(self) -> str:
        return ", ".join(f"{e.metric} {e.direction}" for e in self.predicted_effects) or "unspecified"


class Implementation(BaseModel):
    ok: bool
    summary: str = ""
    reason: str = Field("", description="why the proposer gave up, when ok is False")


@dataclass
class ProposalContext:
    run_id: str
    generation: int
    domain: str
    report: RolloutReport
    harness_dir: Path
    """A read-only export of main at this generation."""
    skills: SkillSet
    seed: int
    history: list[dict[str, Any]] = field(default_factory=list)
    """Earlier candidates of this run: hypothesis title, skills, verdict, stage."""
    evidence_dir: Path | None = None
    """The generation's evidence folder (meta_agent/evolve/evidence.py), read-only."""
    sandbox: Sandbox | None = None
    """Where agent-written analysis code runs (the diagnostician's run_python); None: no such tool."""


@dataclass
class Workspace:
    """Where a proposer implements one hypothesis: an editable export of main inside a sandbox session."""

    path: Path
    session: Session
    kit_dir: Path
    """Holds skillkit.py (mounted read-only in the session)."""
    rollouts: Path | None = None
    """This generation's rollouts (+ hacking probes), readable in the session, for `harness replay`."""
    tasks: Path | None = None
    """The training tasks file, readable in the session."""
    evidence: Path | None = None
    """The generation's evidence folder, mounted read-only in the session (the coder reads `evidence/...`)."""


@dataclass(frozen=True)
class Failure:
    """Why the backtest rejected a candidate's last attempt: what a repair turn is shown."""

    stage: str
    """static or replay"""
    reason: str
    """The stage's own words (selftest's error lines, the replay's finding), bounded."""
    attempt: int
    """1 for the first repair turn."""


class Proposer(Protocol):
    """Turns a rollout report into hypotheses and implements them. A class registered in `PROPOSERS`
    (or named as `module:Class`) is built with `Class.from_config(cfg, skills, run_dir)`.

    A proposer may also define `repair(hypothesis, workspace, failure: Failure) -> Implementation`:
    the workspace then holds its failed attempt, and a revision is committed on the same branch and
    backtested again (up to `repair_turns` times). One without it gets no repair turns.
    """

    name: str

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        """Up to k hypotheses for this generation, best first."""
        ...

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        """Edit the files in `workspace.path` (only through `workspace.session`)."""
        ...

    def learn(self, outcome: Outcome) -> Path | None:
        """After a verdict: optionally write or update a skill; returns a new skill folder to register."""
        ...


@dataclass
class Outcome:
    """What the loop tells a proposer after a candidate's verdict (input of the skill writer)."""

    run_id: str
    generation: int
    domain: str
    hypothesis: Hypothesis
    diff: str
    verdict: dict[str, Any]
    """Verdict fields: verdict, stage, reason, kind, delta, ci."""
    skills_dir: Path
    """The run's skills library: where a new skill folder must be written."""
