"""The Proposer protocol and the typed hypothesis it yields."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, get_args, runtime_checkable

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from meta_agent.journal import VerdictRecorded
from meta_agent.llm.text import bound, clean_text
from meta_agent.report.rollout_report import RolloutReport
from meta_agent.skills.store import SkillSet
from meta_agent.verdicts import Verdict
from sandboxes import Mount, Sandbox, Session

Surface = Literal["rewards", "filters", "rl_settings", "prompts", "diagnostics"]
SURFACES: tuple[str, ...] = get_args(Surface)


MAX_TEXT = 4_000
"""Characters kept of a hypothesis's free text (evidence, intervention): it is re-sent on every coder turn and
becomes a commit message, so a proposer's 150,000 characters must not."""
MAX_NAME = 200
MAX_ITEMS = 50
MAX_PARAMS_JSON = 8_000
MAX_PARAMS_DEPTH = 6


def _cut(limit: int) -> Any:
    """A before-validator keeping at most `limit` characters of a string (with a marker saying so)."""
    def cut(value: object) -> object:
        return bound(clean_text(value), limit) if isinstance(value, str) else value
    return cut


def _depth(value: object, level: int = 0) -> int:
    """Nesting depth of plain JSON data, counted without recursing past the limit."""
    if level > MAX_PARAMS_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


ShortText = Annotated[str, BeforeValidator(_cut(MAX_NAME))]
LongText = Annotated[str, BeforeValidator(_cut(MAX_TEXT))]


class PredictedEffect(BaseModel):
    metric: ShortText = Field(description="a report metric or label, e.g. zero_variance_frac, selection_accuracy")
    direction: Literal["up", "down"]


class Hypothesis(BaseModel):
    """One diagnosed failure mode and the intervention meant to fix it. Every field is bounded: a proposer's
    text goes into prompts, commit messages, the journal and git notes."""

    title: str = Field(max_length=100, description="one line; becomes the commit title")
    failure_mode: ShortText = Field(description="the diagnostic label or metric the hypothesis is about")
    evidence: LongText = Field(description="numbers from the report and example rollout ids")
    evidence_rollouts: list[ShortText] = Field(default_factory=list, max_length=MAX_ITEMS)
    intervention: LongText = Field(description="what to change in the harness, concretely")
    kind: Literal["validity", "performance"] = Field(
        description="validity: closes a reward hole or adds a diagnostic (judged on its replay and must not pay "
        "rejected rollouts in its own training); "
        "performance: shaping, filters, curriculum, RL settings (needs the train stage)"
    )
    predicted_effects: list[PredictedEffect] = Field(default_factory=list, max_length=MAX_ITEMS)
    skills_used: list[ShortText] = Field(default_factory=list, max_length=MAX_ITEMS)
    new_labels: list[ShortText] = Field(default_factory=list, max_length=MAX_ITEMS,
                                        description="diagnostic labels the change adds")
    surface: Surface | None = Field(None, description="the part of the harness it changes: rewards, filters (and "
                                                      "curriculum), rl_settings, prompts or diagnostics; with "
                                                      "llm.specialists on, the coder of that surface implements it")
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("title", mode="before")
    @classmethod
    def _clean_title(cls, value: object) -> object:
        return clean_text(value) if isinstance(value, str) else value

    @field_validator("params")
    @classmethod
    def _plain_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Parameters are a few plain values (a learning rate, a penalty): deep or large data is refused here,
        before anything serializes it."""
        if _depth(params) > MAX_PARAMS_DEPTH:
            raise ValueError(f"params nest deeper than {MAX_PARAMS_DEPTH} levels; give a few plain values")
        try:
            size = len(json.dumps(params, allow_nan=False))
        except (TypeError, ValueError) as e:
            raise ValueError(f"params must be plain JSON values ({e})") from None
        if size > MAX_PARAMS_JSON:
            raise ValueError(f"params take {size:,} characters as JSON, over {MAX_PARAMS_JSON:,}")
        return params

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
    history: list[VerdictRecorded] = field(default_factory=list)
    """Earlier candidates of this run, as journaled: verdict, stage, reason, delta, and the hypothesis's title,
    skills and skill params."""
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

    Optional capabilities are protocols of their own, checked with `isinstance`: `Repairs` (repair
    turns), `Mounts` (extra read-only paths in the coder's sandbox), `BudgetAware` (its own budget).
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


@runtime_checkable
class Repairs(Protocol):
    """A proposer that revises a failed attempt: the workspace holds it, and the revision is committed on the
    same branch and backtested again (up to `repair_turns` times). One without it gets no repair turns."""

    def repair(self, hypothesis: Hypothesis, workspace: Workspace, failure: Failure) -> Implementation: ...


@runtime_checkable
class Mounts(Protocol):
    """A proposer whose coder needs more in its sandbox session (e.g. an external coder's relay socket)."""

    def mounts(self) -> list[Mount]: ...


@runtime_checkable
class BudgetAware(Protocol):
    """A proposer with a budget of its own (LLM tokens, dollars): the reason the run must stop, or None."""

    def budget_reason(self) -> str | None: ...


@dataclass
class Outcome:
    """What the loop tells a proposer after a candidate's verdict (input of the skill writer)."""

    run_id: str
    generation: int
    domain: str
    hypothesis: Hypothesis
    diff: str
    verdict: Verdict
    """The candidate's verdict: verdict, stage, reason, kind, delta, ci."""
    skills_dir: Path
    """The run's skills library: where a new skill folder must be written."""
