"""One candidate of a generation: implement its hypothesis on a branch, then the backtest cascade
(static -> replay -> train), stopping at the first failure, then the gate. Every stage is a
journaled step, and the verdict is attached as a git note to the candidate's commit, so a losing
branch carries its reason. Whatever a stage raises fails this candidate, never the run.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from meta_agent.agents.base import Failure, Hypothesis, Repairs
from meta_agent.backtest.gate import ci_level, decide
from meta_agent.backtest.replay import run_replay
from meta_agent.backtest.replay_set import ReplaySet
from meta_agent.backtest.static import run_static
from meta_agent.backtest.train_stage import Control
from meta_agent.contract import ReplayRecord
from meta_agent.crashpoints import crashpoint
from meta_agent.errors import BudgetExhausted, failure_text
from meta_agent.eventlog import EventLog
from meta_agent.evolve.context import RunContext
from meta_agent.execution.jobs import JobEnv, TrainJob, run_train_job
from meta_agent.gitops import add_note, export_tree
from meta_agent.journal import CandidateCreated, Repaired, StageDone, VerdictRecorded
from meta_agent.journal_keys import CandidateId, cand_dir, gen_key
from meta_agent.llm.text import bound
from meta_agent.verdicts import StageResult, Verdict
from meta_agent.workspace import implement

REPAIRABLE = ("static", "replay")
"""Stages whose failure a repair turn may fix: their output says what is wrong with the code."""
MAX_FAILURE_CHARS = 6_000


@dataclass(frozen=True)
class GenerationView:
    """What a candidate needs from its generation, and nothing else."""

    g: int
    dir: Path
    seed: int
    policy: Path
    history: Path | None
    main_before: str
    noise_floor: float
    control: Control
    main_replay: dict[str, ReplayRecord]
    replay_set: ReplaySet
    guard_labels: list[str]
    """Labels that mark a rollout invalid: the domain's, plus diagnostics promoted in earlier generations."""
    evidence: Path | None = None
    """The generation's evidence folder (the coder reads it as `evidence/...`)."""

    def key(self, *parts: object) -> str:
        return gen_key(self.g, *parts)


class CandidateRun:
    """One candidate; with a `tag` (e.g. `+combined`), a re-test of it combined with earlier winners."""

    def __init__(self, ctx: RunContext, gen: GenerationView, k: int, hypothesis: Hypothesis, tag: str = "",
                 parent: tuple[str, str] | None = None) -> None:
        """`parent`: (archived cand_id, the commit that merged it onto main) to build on instead of main."""
        self.ctx, self.gen, self.k, self.hypothesis, self.tag = ctx, gen, k, hypothesis, tag
        self.parent = parent

    @property
    def id(self) -> CandidateId:
        return CandidateId(self.ctx.run_id, self.gen.g, self.k)

    @property
    def cand_id(self) -> str:
        return str(self.id)

    @property
    def stage_id(self) -> str:
        """Whose stages these are: the candidate's, or its combination's (`cand_id+combined`)."""
        return self.cand_id + self.tag

    @property
    def branch(self) -> str:
        return self.id.branch

    @property
    def dir(self) -> Path:
        return self.gen.dir / cand_dir(self.k, self.tag)

    def key(self, part: str) -> str:
        return self.id.key(part, tag=self.tag)

    def pending_train(self) -> TrainJob | None:
        """Everything of this candidate up to its training backtest (implement, static, replay, repairs);
        the train stage's job if it still has to run, else None (and the verdict is then recorded)."""
        state = self.advance(train_now=False)
        return state.job if isinstance(state, AwaitingTraining) else None

    def run(self) -> Verdict:
        """The whole cascade, training included, to the candidate's verdict."""
        state = self.advance(train_now=True)
        assert isinstance(state, Verdict)
        return state

    def advance(self, train_now: bool) -> Verdict | AwaitingTraining:
        """Take the candidate as far as it goes: implemented -> static -> replay (with repair turns) ->
        trained -> decided. Each step done is journaled, so a later call (or a resumed run) starts where
        the last stopped. `train_now=False` stops at a train stage not yet run and returns it as
        `AwaitingTraining`: the generation runs every candidate's training side by side (the fan-out, which
        journals each result under its key), then calls this again to decide."""
        ctx, h = self.ctx, self.hypothesis
        done = ctx.log.done(self.key("verdict"), VerdictRecorded)
        if done is not None:
            return done.verdict_only()
        self._say("created", f"gen {self.gen.g}: candidate {self.k} ({h.title}): implementing")
        created = ctx.step(self.key("created"), CandidateCreated, self._implement_or_fail)
        stages = [self.stage("implement", lambda: StageResult(
            stage="implement", passed=created.ok, reason=created.reason or "implemented"))]
        commit = created.commit if created.ok else None
        if commit:
            cascade = self.cascade(commit, self.gen.main_before, train_now=train_now)
            for attempt in range(1, ctx.cfg.repair_turns + 1):
                if isinstance(cascade, AwaitingTraining):
                    break
                failed = cascade[-1]
                if failed.passed or failed.stage not in REPAIRABLE or not isinstance(ctx.proposer, Repairs):
                    break
                repaired = ctx.step(self.key(f"repair-{attempt}"), Repaired,
                                    functools.partial(self._repair, commit, failed, attempt))
                if repaired.commit is None:
                    break
                commit = repaired.commit
                cascade = self.cascade(commit, self.gen.main_before, attempt, train_now=train_now)
            if isinstance(cascade, AwaitingTraining):
                return cascade
            stages += cascade
        verdict = decide(self.cand_id, h.kind, stages, self.gen.noise_floor, ctx.cfg.gate)
        if commit:  # the note first: a kill before the journal line redoes both
            add_note(ctx.repo, commit, note_for(verdict, ctx.log))
            crashpoint("verdict/after-note", ctx.run_dir)
        ctx.log.append(VerdictRecorded(**verdict.model_dump(), title=h.title, skills=h.skills_used,
                                       params=h.params),
                       key=self.key("verdict"))
        return verdict

    def cascade(self, commit: str, base: str, attempt: int = 0, train_now: bool = True
                ) -> list[StageResult] | AwaitingTraining:
        """static -> replay -> train (every kind of change), stopping at a failure.
        `attempt` > 0: the cascade of the commit that repair turn made (journaled under its own keys).
        `train_now=False`: a train stage not yet journaled is returned as `AwaitingTraining` instead."""
        ctx, what = self.ctx, f"gen {self.gen.g}: candidate {self.k}{self.tag}"
        if attempt:
            what += f" (repair {attempt})"
        at = f"@{attempt}" if attempt else ""
        self._say("static" + at, f"{what}: static checks")
        stages = [self.stage("static", lambda: run_static(
            ctx.repo, base, commit, ctx.sandbox, ctx.cfg.sandbox.limits(), self.dir / "work"), at)]
        if stages[-1].passed:
            self._say("replay" + at, f"{what}: replaying rollouts and probes")
            stages.append(self.stage("replay", lambda: self._replay(commit), at))
        if stages[-1].passed:  # every kind trains: nothing reaches main on replay evidence alone
            key = self.key("train" + at)
            if not train_now and ctx.log.done(key, StageDone) is None:
                ctx.budget.check(key)
                return AwaitingTraining(self.train_job(commit, key))  # the fan-out says it, for all at once
            self._say("train" + at, f"{what}: training backtest ({ctx.cfg.steps} steps) + selection eval")
            stages.append(self.stage("train", lambda: self._train(commit, key), at))
        return stages

    def _say(self, part: str, text: str) -> None:
        """Progress for a step about to run (not for one a first pass or an earlier process finished)."""
        if not self.ctx.log.finished(self.key(part)):
            self.ctx.reporter.phase(text)

    def _repair(self, commit: str, failed: StageResult, attempt: int) -> Repaired:
        """One repair turn: the proposer revises `commit` (the failed attempt), shown why it failed."""
        ctx, h = self.ctx, self.hypothesis
        ctx.reporter.phase(f"gen {self.gen.g}: candidate {self.k}: repair {attempt} after failing {failed.stage}")
        failure = Failure(stage=failed.stage, reason=bound(failed.reason, MAX_FAILURE_CHARS), attempt=attempt)
        # (llm.text.bound keeps head and tail: pytest's summary and the replay's finding are at the end)
        started = time.monotonic()
        try:
            new, outcome = implement(
                repo=ctx.repo, base=commit, branch=self.branch, cand_id=self.cand_id, hypothesis=h,
                proposer=ctx.proposer, sandbox=ctx.sandbox, limits=ctx.cfg.sandbox.limits(),
                work=self.dir / f"repair-{attempt}", kit_dir=ctx.kit_dir,
                readable=[lib.root for lib in ctx.skills.libraries], when=ctx.when(self.key(f"repair-{attempt}")),
                rollouts=self.gen.replay_set.session_path, tasks=ctx.tasks_file, evidence=self.gen.evidence,
                failure=failure)
            reason = outcome.reason or "revised"
        except (BudgetExhausted, KeyboardInterrupt):
            raise
        except Exception as e:  # like a failed implementation: this candidate's, never the run's
            new, reason, outcome = None, f"repair raised {failure_text(e)}", None
        return Repaired(cand_id=self.cand_id, attempt=attempt, failed_stage=failed.stage, commit=new,
                        reason=bound(reason, MAX_FAILURE_CHARS), summary=outcome.summary if outcome else "",
                        implement_seconds=time.monotonic() - started)

    def stage(self, name: str, fn: Callable[[], StageResult], at: str = "") -> StageResult:
        """Run one stage; whatever it raises fails this candidate at this stage (journaled, so a resumed
        run does not re-enter a stage that can only fail again). Budget stops still stop the run."""
        def guarded() -> StageDone:
            started = time.monotonic()
            try:
                result = fn()
            except (BudgetExhausted, KeyboardInterrupt):
                raise
            except Exception as e:  # one candidate's failure, whatever raised it, is that candidate's
                result = StageResult(stage=name, passed=False, seconds=time.monotonic() - started,
                                     reason=f"{name} raised {failure_text(e)}")
            return StageDone(cand_id=self.stage_id, **result.model_dump())

        return self.ctx.step(self.key(name + at), StageDone, guarded).result()

    def _implement_or_fail(self) -> CandidateCreated:
        try:
            return self._implement()
        except (BudgetExhausted, KeyboardInterrupt):
            raise
        except Exception as e:
            return self._created(commit=None, reason=f"implementation raised {failure_text(e)}", summary="",
                                 seconds=0.0)

    def _created(self, commit: str | None, reason: str, summary: str, seconds: float,
                 not_applied: list[str] | None = None) -> CandidateCreated:
        h = self.hypothesis
        return CandidateCreated(
            cand_id=self.cand_id, run_id=self.ctx.run_id, gen=self.gen.g, k=self.k,
            branch=self.branch if commit else "", commit=commit, ok=commit is not None, reason=reason,
            summary=summary, title=h.title, kind=h.kind, skills=h.skills_used, implement_seconds=seconds,
            parent=self.parent[0] if self.parent else None, not_applied=not_applied or [])

    def _implement(self) -> CandidateCreated:
        ctx, h = self.ctx, self.hypothesis
        roots = [lib.root for lib in ctx.skills.libraries]
        started = time.monotonic()
        commit, outcome = implement(
            repo=ctx.repo, base=self.parent[1] if self.parent else self.gen.main_before, branch=self.branch,
            cand_id=self.cand_id, hypothesis=h,
            proposer=ctx.proposer, sandbox=ctx.sandbox, limits=ctx.cfg.sandbox.limits(), work=self.dir / "edit",
            kit_dir=ctx.kit_dir, readable=roots, when=ctx.when(self.key("commit")),
            rollouts=self.gen.replay_set.session_path, tasks=ctx.tasks_file, evidence=self.gen.evidence,
        )
        crashpoint("candidate/after-branch", ctx.run_dir)
        return self._created(commit, outcome.reason, outcome.summary, time.monotonic() - started,
                             not_applied=outcome.not_applied)

    def _replay(self, commit: str) -> StageResult:
        ctx = self.ctx
        workdir = export_tree(ctx.repo, commit, self.dir / "work")
        return run_replay(sandbox=ctx.sandbox, limits=ctx.cfg.sandbox.limits(), workdir=workdir, commit=commit,
                          replay_set=self.gen.replay_set, tasks_file=ctx.tasks_file, main_replay=self.gen.main_replay,
                          out=self.dir / "replay" / "replay.jsonl", domain=ctx.domain)

    def train_job(self, commit: str, key: str) -> TrainJob:
        """This candidate's train stage as data, for whichever executor runs it (execution/jobs.py)."""
        ctx, gen = self.ctx, self.gen
        return TrainJob(
            key=key, stage_id=self.stage_id, config=ctx.cfg.model_dump(mode="json"), harness=str(ctx.repo.working_dir),
            commit=commit, main_commit=gen.main_before, policy=str(gen.policy), root_policy=str(ctx.root_policy),
            history=str(gen.history) if gen.history else None, tasks_file=str(ctx.tasks_file), seed=gen.seed,
            steps=ctx.cfg.steps, control_dir=str(gen.dir / "main"), control_eval=str(gen.dir / "control-eval.json"),
            guard_labels=gen.guard_labels, level=ci_level(ctx.cfg.gate, ctx.cfg.gate_tests, ctx.cfg.generations),
            cand_dir=str(self.dir), eval_limit=ctx.cfg.selection_limit)

    def _train(self, commit: str, key: str) -> StageResult:
        ctx = self.ctx
        job = self.train_job(commit, key)
        env = JobEnv(domain=ctx.domain, sandbox=ctx.sandbox, repo=ctx.repo,
                     on_step=ctx.reporter.training_step, on_eval=ctx.reporter.tasks_answered)
        return run_train_job(job, env)


@dataclass(frozen=True)
class AwaitingTraining:
    """A candidate whose static and replay stages passed and whose train stage has not run: its job."""

    job: TrainJob


def stages_of(log: EventLog, cand_id: str) -> list[StageDone]:
    return [s for s in log.of_type(StageDone) if s.cand_id == cand_id]


def note_for(v: Verdict, log: EventLog) -> str:
    """The git note on a candidate (and its merge): verdict plus every stage's metrics."""
    stages = [s.model_dump(mode="json") for s in stages_of(log, v.cand_id)]
    return json.dumps({"verdict": v.model_dump(mode="json"), "stages": stages}, indent=2, sort_keys=True)
