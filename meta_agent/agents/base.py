"""The Proposer protocol, what it is given and what it returns (the hypothesis model is meta_agent.hypothesis)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from meta_agent.hypothesis import Hypothesis
from meta_agent.journal import VerdictRecorded
from meta_agent.report.rollout_report import RolloutReport
from meta_agent.skills.known import KnownRejection
from meta_agent.skills.store import SkillSet
from meta_agent.verdicts import Verdict
from sandboxes import Mount, Sandbox, Session


class Implementation(BaseModel):
    ok: bool
    summary: str = ""
    reason: str = Field("", description="why the proposer gave up, when ok is False")
    not_applied: list[str] = Field(
        default_factory=list, description="skills of the hypothesis whose change is not in the commit (the "
                                          "harness had it, or it could not apply here): they get no evidence")


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
    known: list[KnownRejection] = field(default_factory=list)
    """Skill variants earlier runs measured and rejected under this generation's exact conditions
    (skills/known.py); empty with `--rerun-known`."""


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
