"""The run journal's events: one pydantic model per event type.

Every finished step of an evolve run appends one of these to `events.jsonl` (see `lineage.EventLog`)
under a key (`g0/main-train`, `g1/c0/replay`, ...). Readers get these models back, never raw
dicts, so a field is named in one place and a journal from another version fails loudly.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from meta_agent.hypothesis import Hypothesis
from meta_agent.stats import Interval
from meta_agent.verdicts import StageResult, Verdict


class Event(BaseModel):
    """Base of every journal event; `TYPE` is its name in the file."""

    model_config = ConfigDict(extra="forbid")
    TYPE: ClassVar[str] = ""


class RunStarted(Event):
    TYPE: ClassVar[str] = "run_started"
    run_id: str
    domain: str
    harness: str
    started: str
    root_policy: str
    initial_main: str
    epoch: int
    sealed: str = Field("", description="fingerprint of the sealed-split secret the run evaluates with")


class GenerationStarted(Event):
    TYPE: ClassVar[str] = "generation_started"
    main: str
    t: float


class CommitTime(Event):
    """When a commit (a candidate's, a merge) was first made: a resumed run dates it the same, so it
    writes the identical commit instead of a second one."""

    TYPE: ClassVar[str] = "commit_time"
    unix: int


class Trained(Event):
    """A training run of some harness commit (main's, a noise rerun's, the static arm's)."""

    TYPE: ClassVar[str] = "trained"
    out: str
    checkpoint: str
    reward: float | None
    train_seconds: float


class Evaluated(Event):
    TYPE: ClassVar[str] = "evaluated"
    score: float
    eval_seconds: float


class NoiseMeasured(Event):
    TYPE: ClassVar[str] = "noise_measured"
    noise_floor: float
    deltas: list[float]
    train_seconds: float = 0.0
    eval_seconds: float = 0.0
    minimum: float = 0.0
    """The floor's least value, from the evaluation's size: one task's flip (1 / tasks)."""
    pinned: list[int] = []
    """Reruns whose rollouts were main's own, token for token: the harness ignores the seed it is given."""
    failed: list[int] = []
    """Reruns that failed (main's harness under another seed); none finished: the floor is held at 1.0."""


class MainReplayed(Event):
    TYPE: ClassVar[str] = "main_replayed"
    probes_rewarded: float | None


class Proposed(Event):
    TYPE: ClassVar[str] = "hypotheses"
    hypotheses: list[Hypothesis]
    propose_seconds: float = 0.0
    failure: str = ""
    """Why the proposer yielded nothing (it raised, or the search-step budget paid for no candidate) or what it
    yielded that was dropped; empty when all went well."""


class CandidateCreated(Event):
    TYPE: ClassVar[str] = "candidate_created"
    cand_id: str
    run_id: str
    gen: int
    k: int
    branch: str
    commit: str | None
    ok: bool
    reason: str
    summary: str = ""
    title: str
    kind: Literal["validity", "performance"]
    skills: list[str]
    implement_seconds: float = 0.0
    parent: str | None = None
    """The archived candidate it was built on (its change merged onto main first); None: built on main."""
    not_applied: list[str] = Field(default_factory=list)
    """Skills of the hypothesis whose change the commit does not hold (a recipe leaves out a member the
    harness already has or that cannot apply to it): they get no evidence from this candidate."""


class ParentsChosen(Event):
    """Which of a generation's hypotheses are built on an archived candidate instead of main
    (meta_agent/evolve/archive.py): k -> the archived cand_id and the commit that merged it onto main."""

    TYPE: ClassVar[str] = "parents_chosen"
    parents: dict[int, tuple[str, str]] = Field(default_factory=dict)
    skipped: list[str] = Field(default_factory=list)
    """Archived candidates that no longer merge onto main, with the reason."""


class StageDone(StageResult, Event):
    TYPE: ClassVar[str] = "stage_done"
    cand_id: str

    def result(self) -> StageResult:
        return StageResult.model_validate(self.model_dump(exclude={"cand_id"}))


class VerdictRecorded(Verdict, Event):
    TYPE: ClassVar[str] = "verdict"
    title: str = ""
    skills: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    """The skill parameters the candidate used: the proposer's record of which variant it tried."""

    def verdict_only(self) -> Verdict:
        return Verdict.model_validate(self.model_dump(exclude={"title", "skills", "params"}))


class Combined(Event):
    """A winner made to sit on a main that earlier winners of its generation already moved."""

    TYPE: ClassVar[str] = "combined"
    cand_id: str
    how: Literal["merge", "rebased", "conflict"]
    """merge: it merges cleanly; rebased: its proposer re-implemented it on the new main; conflict: neither."""
    commit: str | None
    branch: str
    reason: str = ""


class Repaired(Event):
    """A repair turn: the proposer revised a candidate that failed static or replay, shown the failure.
    A new commit goes on the same branch (the failed attempt stays in its history); None: no revision."""

    TYPE: ClassVar[str] = "repaired"
    cand_id: str
    attempt: int = Field(ge=1)
    failed_stage: str
    commit: str | None
    reason: str
    summary: str = ""
    implement_seconds: float = 0.0


def with_repairs(log: Any, created: CandidateCreated) -> CandidateCreated:
    """The candidate as it stands: its commit is the last repair's, when a repair made one."""
    commits = [r.commit for r in log.of_type(Repaired) if r.cand_id == created.cand_id and r.commit]
    return created.model_copy(update={"commit": commits[-1]}) if commits else created


class Merged(Event):
    TYPE: ClassVar[str] = "merged"
    cand_id: str
    merge_commit: str
    branch: str


class SkillEvidence(Event):
    TYPE: ClassVar[str] = "skill_evidence"
    skills: list[str]
    retired: list[str]


class SkillWritten(Event):
    TYPE: ClassVar[str] = "skill_written"
    skill: str | None
    path: str = ""
    refused: str = ""
    """Why a skill that was written is not published (its apply.py failed on a fresh harness)."""


class GenerationDone(Event):
    TYPE: ClassVar[str] = "generation_done"
    run_id: str
    gen: int
    main_before: str
    main_after: str
    policy: str
    next_policy: str
    control_score: float
    control_low: float
    control_high: float
    dominant: list[str]
    history: str
    noise_floor: float
    time: dict[str, float]


class FinalEval(Event):
    TYPE: ClassVar[str] = "final_eval"
    evolved_policy: str
    evolved: Interval
    """The evolved policy's sealed test score."""
    static_policy: str | None = None
    static: Interval | None = None
    paired: Interval | None = None
    """evolved - static, paired over the test tasks."""
    diffs: dict[str, int] | None = None
    """SWE: test episodes that left a diff, per arm (resolved or not): how far a policy got when none resolves."""
    tasks: int | None = None


class Resumed(Event):
    """A process took the run up again (`meta-agent resume`). The time from the last event the previous
    process journaled to `t` is downtime (the run was killed, or the machine off), not the run's work."""

    TYPE: ClassVar[str] = "resumed"
    t: float


class RunDone(Event):
    TYPE: ClassVar[str] = "run_done"
    run_id: str
    final_main: str


EVENT_TYPES: dict[str, type[Event]] = {cls.TYPE: cls for cls in (
    RunStarted, GenerationStarted, CommitTime, Trained, Evaluated, NoiseMeasured, MainReplayed, Proposed,
    CandidateCreated, ParentsChosen, StageDone, VerdictRecorded, Combined, Repaired, Merged, SkillEvidence,
    SkillWritten, GenerationDone, FinalEval, Resumed, RunDone,
)}
"""Type name in the file -> model; every event the loop writes is one of these."""
