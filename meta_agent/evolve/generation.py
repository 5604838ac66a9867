"""One generation of the evolve loop, as in ARCHITECTURE.md's data flow (no CLI or setup details here).

train P_g under main (this run is also the control) -> evaluate it -> rollout report (+ hacking
probes) -> proposer hypotheses -> per candidate: implement on a branch -> static -> replay ->
train -> gate -> merge winners -> skill evidence. Every step is journaled in the event log under a
key; on resume a step whose key is there is not redone.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import git
from pydantic import ValidationError

from meta_agent.agents.base import Hypothesis, ProposalContext
from meta_agent.backtest.replay import replay_evidence
from meta_agent.backtest.replay_set import ReplaySet, build_replay_set
from meta_agent.backtest.train_stage import Control, invalid_share
from meta_agent.contract import ReplayRecord, RolloutRecord, read_jsonl
from meta_agent.crashpoints import crashpoint
from meta_agent.domains.base import EvalResult
from meta_agent.errors import BudgetExhausted, failure_text
from meta_agent.evolve.active_time import active_seconds
from meta_agent.evolve.archive import choose_parents
from meta_agent.evolve.candidate import CandidateRun, GenerationView
from meta_agent.evolve.conditions import conditions
from meta_agent.evolve.confirm import confirm
from meta_agent.evolve.context import RunContext
from meta_agent.evolve.evidence import write_evidence
from meta_agent.evolve.fanout import run_backtests
from meta_agent.evolve.static_arm import static_jobs
from meta_agent.evolve.steps import evaluate, evaluated, run_jobs, train_job
from meta_agent.evolve.winners import learn_from, merge_winners
from meta_agent.execution.jobs import RunJob, RunJobResult
from meta_agent.gitops import export_tree
from meta_agent.harness_runner import HarnessRunner
from meta_agent.journal import (
    CandidateCreated,
    Evaluated,
    GenerationDone,
    GenerationStarted,
    MainReplayed,
    NoiseMeasured,
    ParentsChosen,
    Proposed,
    Repaired,
    StageDone,
    Trained,
    VerdictRecorded,
)
from meta_agent.journal_keys import CandidateId, gen_dir, gen_key
from meta_agent.llm.text import bound
from meta_agent.report.render import write_report
from meta_agent.sealed import sealed_seed
from meta_agent.skills.known import KnownRejection, known_rejections
from meta_agent.stats import paired_bootstrap_ci
from meta_agent.training import TrainedRun, load_trained


class Generation:
    def __init__(self, ctx: RunContext, g: int, policy: Path, history: Path | None) -> None:
        self.ctx, self.g, self.policy, self.history = ctx, g, policy, history
        self.main_before = ""
        self.conditions = ""
        """What this generation's backtests run under (evolve/conditions.py), for the evidence they leave."""
        self.noise_floor = 0.0
        self.evidence: Path | None = None
        self.rerun_failures: dict[str, str] = {}
        """Noise reruns that failed (by job key): why."""

    @property
    def dir(self) -> Path:
        return self.ctx.run_dir / gen_dir(self.g)

    @property
    def seed(self) -> int:
        return self.ctx.cfg.seed + self.g

    def key(self, *parts: object) -> str:
        return gen_key(self.g, *parts)

    def run(self) -> GenerationDone:
        ctx, g = self.ctx, self.g
        done = ctx.log.done(self.key("done"), GenerationDone)
        if done is not None:
            return done
        self.main_before = ctx.step(self.key("start"), GenerationStarted, lambda: GenerationStarted(
            main=ctx.repo.commit("main").hexsha, t=time.time())).main
        self.conditions = conditions(ctx, g, self.main_before, self.policy, self.history)
        noise_runs = self._main_and_noise()
        control_run = load_trained(self.dir / "main", ctx.domain, str(ctx.root_policy), ctx.tasks_file)
        ctx.reporter.phase(f"gen {g}: evaluating main on the sealed selection split")
        ctx.step(self.key("control-eval"), Evaluated, lambda: evaluated(evaluate(
            ctx, control_run.checkpoint, self.dir / "control-eval.json", limit=ctx.cfg.selection_limit)))
        control_eval = EvalResult.model_validate_json((self.dir / "control-eval.json").read_text())
        control = Control(run=control_run, eval=control_eval,
                          invalid_share=invalid_share(control_run, ctx.domain.invalid_labels))
        self.noise_floor = self._noise(control_eval, noise_runs, control_run)
        # What the proposer sees of it: 0 means two training seeds left every greedy answer the same.
        control_run.report.selection_noise = self._spread() if ctx.cfg.noise_reruns else None
        main_replay, replay_set = self._main_replay(control_run)
        self.evidence = self._evidence(control_run)
        hypotheses = self._propose(control_run)
        view = GenerationView(g=g, dir=self.dir, seed=self.seed, policy=self.policy, history=self.history,
                              main_before=self.main_before, noise_floor=self.noise_floor, control=control,
                              main_replay=main_replay, replay_set=replay_set, guard_labels=guard_labels(ctx, g),
                              evidence=self.evidence)
        parents = self._parents(hypotheses)
        cands = [CandidateRun(ctx, view, k, h, parent=parents.get(k)) for k, h in enumerate(hypotheses)]
        # Implement, static and replay in the driver, one candidate after another (cheap, and they commit to
        # the repo); the training backtests, the costly part, go to the executor together.
        run_backtests(ctx, g, [job for c in cands if (job := c.pending_train()) is not None], also=static_jobs(
            ctx, g, self.main_before, self.policy))
        verdicts = [c.run() for c in cands]
        verdicts = confirm(ctx, view, verdicts, hypotheses)
        verdicts, next_policy = merge_winners(ctx, view, verdicts, hypotheses, control_run)
        learn_from(ctx, self.g, self.main_before, verdicts, hypotheses, self.conditions)
        event = GenerationDone(
            run_id=ctx.run_id, gen=g, main_before=self.main_before, main_after=ctx.repo.commit("main").hexsha,
            policy=str(self.policy), next_policy=next_policy, control_score=control_eval.score.mean,
            control_low=control_eval.score.low, control_high=control_eval.score.high,
            dominant=control_run.report.dominant, history=str(self.dir / "main" / "rollouts.verified.jsonl"),
            noise_floor=self.noise_floor, time=self._time_spent(),
        )
        ctx.log.append(event, key=self.key("done"))
        return event

    def _time_spent(self) -> dict[str, float]:
        """Where this generation's wall time went (for `bench/loop_overhead.py` and the summary)."""
        spent = {"train": 0.0, "eval": 0.0, "proposer": 0.0}
        for record in self.ctx.log.keyed(gen_key(self.g, "")):
            e = record.event
            if isinstance(e, Trained):
                spent["train"] += e.train_seconds
            elif isinstance(e, Evaluated):
                spent["eval"] += e.eval_seconds
            elif isinstance(e, NoiseMeasured):
                spent["train"] += e.train_seconds
                spent["eval"] += e.eval_seconds
            elif isinstance(e, Proposed):
                spent["proposer"] += e.propose_seconds
            elif isinstance(e, CandidateCreated | Repaired):
                spent["proposer"] += e.implement_seconds
            elif isinstance(e, StageDone):
                spent["train"] += float(e.metrics.get("train_seconds", 0.0))
                spent["eval"] += float(e.metrics.get("eval_seconds", 0.0))
        start = self.ctx.log.done(self.key("start"), GenerationStarted)
        spent["wall"] = active_seconds(self.ctx.log, start.t, time.time()) if start else 0.0
        return spent

    def _main_and_noise(self) -> dict[str, Trained]:
        """Main's training and its control evaluation, and beside them (as the executor allows) the noise
        reruns when this generation surely measures the floor (none measured yet, or one too old); the
        reruns' trainings done here, by job key (journaled with the floor, in `_noise`)."""
        ctx, g = self.ctx, self.g
        shards = ctx.cfg.executor.eval_shards
        jobs: list[RunJob] = []
        if ctx.log.done(self.key("main-train"), Trained) is None:
            ctx.reporter.phase(f"gen {g}: training the policy under main ({ctx.cfg.steps} steps)")
            inline_eval: dict[str, Any] = {} if shards > 1 else dict(
                eval_split="selection", eval_out=self.dir / "control-eval.json", eval_limit=ctx.cfg.selection_limit)
            jobs.append(train_job(ctx, self.key("main-train"), "main's training", self.main_before, self.policy,
                                  self.seed, self.history, self.dir / "main", self.dir / "work-main", **inline_eval))
        reruns = []
        if ctx.cfg.noise_reruns and self._noise_due() and ctx.log.done(self.key("noise"), NoiseMeasured) is None:
            reruns = [self._rerun_job(i) for i in range(ctx.cfg.noise_reruns)]
            if jobs:
                ctx.reporter.phase(f"gen {g}: {len(reruns)} control-vs-control rerun(s) beside it (noise floor)")
        ran: dict[str, Trained] = {}
        labels = {job.key: job.label for job in [*jobs, *reruns]}
        for job, result in run_jobs(ctx, [*jobs, *reruns]):
            assert isinstance(result, RunJobResult)
            if job.key != self.key("main-train") and self._rerun_failed(job.key, labels[job.key], result):
                continue
            ran[job.key] = result.trained_run(labels[job.key])
            if job.key == self.key("main-train"):
                crashpoint("step/after-work", ctx.run_dir)
                ctx.log.append(ran[job.key], key=job.key)
                if result.evaluated is not None:
                    ctx.log.append(result.evaluated, key=self.key("control-eval"))
        return ran

    def _rerun_failed(self, key: str, label: str, result: RunJobResult) -> bool:
        """Whether a noise rerun failed; if so it is remembered and said, and the run goes on without it (main's
        harness may fail under another seed: a hostile or flaky main must not stop the run, or its resume)."""
        if result.error is None:
            return False
        self.rerun_failures[key] = result.error
        self.ctx.reporter.phase(f"gen {self.g}: {label} failed, and the noise floor is measured without it: "
                                f"{bound(result.error, 300)}")
        return True

    def _noise_due(self) -> bool:
        """Whether the floor is measured this generation whatever main scores (else `_last_noise` decides)."""
        last = max((j for j in range(self.g) if (m := self.ctx.log.done(gen_key(j, "noise"), NoiseMeasured))
                    and m.deltas), default=None)
        return last is None or self.g - last >= self.ctx.cfg.noise_refresh

    def _rerun_job(self, i: int) -> RunJob:
        ctx = self.ctx
        out = self.dir / f"noise-{i}"
        inline_eval: dict[str, Any] = {} if ctx.cfg.executor.eval_shards > 1 else dict(
            eval_split="selection", eval_out=out / "eval.json", eval_limit=ctx.cfg.selection_limit)
        # The rerun's seed comes from meta-agent's secret, never from anything a harness can read or set.
        seed = sealed_seed("noise-rerun", f"{ctx.cfg.seed}/{self.g}/{i}") % 2**31
        return train_job(ctx, self.key(f"noise-{i}"), f"control-vs-control rerun {i + 1}", self.main_before,
                         self.policy, seed, self.history, out, self.dir / f"work-noise-{i}", tolerated=True,
                         **inline_eval)

    def _noise(self, control_eval: EvalResult, ran: dict[str, Trained], control_run: TrainedRun) -> float:
        """Control-vs-control: main rerun with another seed; the paired |delta| is the noise floor, never below one
        task's flip. `ran`: the reruns `_main_and_noise` already trained (and evaluated, unless evaluations are
        sharded). A rerun that reproduces main's rollouts exactly shows a harness that ignores its seed: the
        floor it would measure (0) is no floor, and the run says so."""
        ctx = self.ctx
        if ctx.cfg.noise_reruns == 0:
            return 1 / max(1, len(control_eval.results))  # unmeasured: one task's flip is still no evidence
        earlier = self._last_noise(control_eval.score.mean)
        if earlier is not None:
            return earlier

        def measure() -> NoiseMeasured:
            todo = [job for i in range(ctx.cfg.noise_reruns)
                    if (job := self._rerun_job(i)).key not in ran and job.key not in self.rerun_failures]
            for job in todo:
                ctx.reporter.phase(f"gen {self.g}: {job.label} (noise floor)")
            trained = dict(ran)
            labels = {job.key: job.label for job in todo}
            for done, result in run_jobs(ctx, list(todo)):
                assert isinstance(result, RunJobResult)
                if not self._rerun_failed(done.key, labels[done.key], result) and result.trained is not None:
                    trained[done.key] = result.trained
            deltas, train_s, eval_s, pinned, failed = [], 0.0, 0.0, [], []
            for i in range(ctx.cfg.noise_reruns):
                out = self.dir / f"noise-{i}"
                if self.key(f"noise-{i}") in self.rerun_failures:
                    failed.append(i)
                    continue
                if not (out / "eval.json").is_file():  # evaluations are sharded: after the training
                    evaluate(ctx, out / "checkpoint", out / "eval.json", limit=ctx.cfg.selection_limit,
                             label=f"the evaluation of control-vs-control rerun {i + 1}")
                rerun = EvalResult.model_validate_json((out / "eval.json").read_text())
                train_s += trained[self.key(f"noise-{i}")].train_seconds
                eval_s += rerun.wall_time
                ids = [r.task_id for r in control_eval.results]
                d = paired_bootstrap_ci([rerun.per_task()[t] for t in ids], [control_eval.per_task()[t] for t in ids])
                deltas.append(abs(d.mean))
                if _same_rollouts(out / "rollouts.jsonl", control_run):
                    pinned.append(i)
            minimum = 1 / max(1, len(control_eval.results))
            if pinned:
                ctx.reporter.phase(f"gen {self.g}: control-vs-control rerun(s) {[i + 1 for i in pinned]} reproduced "
                                   "main's training rollout for rollout: main's harness ignores the seed it is given "
                                   f"(pinned); the noise floor is held at its minimum {minimum:.3f}")
            floor = max([*deltas, minimum])
            if not deltas:  # every rerun failed: nothing measured, and no performance candidate may pass on that
                floor = 1.0
                ctx.reporter.phase(f"gen {self.g}: no control-vs-control rerun finished, so the noise floor is "
                                   "unmeasured and held at 1.0 this generation (no performance candidate can "
                                   "merge); main's harness fails under another seed")
            return NoiseMeasured(noise_floor=floor, deltas=deltas, train_seconds=train_s, eval_seconds=eval_s,
                                 minimum=minimum, pinned=pinned, failed=failed)

        return ctx.step(self.key("noise"), NoiseMeasured, measure).noise_floor

    def _spread(self) -> float:
        """What the floor in force measured between seeds, before its minimum: the report's `selection_noise`."""
        for j in range(self.g, -1, -1):
            measured = self.ctx.log.done(gen_key(j, "noise"), NoiseMeasured)
            if measured is not None:
                return max(measured.deltas, default=0.0)
        return 0.0

    def _last_noise(self, score: float) -> float | None:
        """The floor measured in an earlier generation, while it still describes this policy: re-measured
        after `noise_refresh` generations, or once main's selection score has moved by more than the floor
        (the spread between seeds depends on the policy: a sharper one varies less)."""
        ctx = self.ctx
        for j in range(self.g - 1, -1, -1):
            measured = ctx.log.done(gen_key(j, "noise"), NoiseMeasured)
            if measured is None or not measured.deltas:  # not measured there (every rerun failed)
                continue
            scored = ctx.log.done(gen_key(j, "control-eval"), Evaluated)
            moved = scored is not None and abs(score - scored.score) > measured.noise_floor
            return None if self.g - j >= ctx.cfg.noise_refresh or moved else measured.noise_floor
        return None

    def _main_replay(self, control_run: TrainedRun) -> tuple[dict[str, ReplayRecord], ReplaySet]:
        """Main re-scores its own rollouts plus the domain's hacking probes: the baseline every candidate's
        replay is compared with, and how many probes main's reward falls for. The probes' text and every
        id in the set come from a secret seed, so no harness can tell a probe from a rollout."""
        ctx = self.ctx
        salt = sealed_seed("replay", f"{ctx.cfg.seed}/{self.g}")  # not the run name: same seed, same set
        tasks = [t for t in ctx.domain.tasks("train") if t.id in {r.task_id for r in control_run.rollouts}]
        replay_set = build_replay_set(self.dir / "replay-input" / "rollouts.jsonl", control_run.rollouts,
                                      ctx.domain.hacking_probes(tasks, seed=salt), str(salt),
                                      session_path=self.dir / "session-replay" / "rollouts.jsonl")

        def run() -> MainReplayed:
            work = export_tree(ctx.repo, self.main_before, self.dir / "work-replay")
            with HarnessRunner(ctx.sandbox, work, commit=self.main_before,
                               readable=[replay_set.path.parent, ctx.tasks_file.parent],
                               writable=[self.dir / "main-replay"], limits=ctx.cfg.sandbox.limits(),
                               domain=ctx.domain) as h:
                replayed = h.replay(rollouts=replay_set.path, tasks=ctx.tasks_file,
                                    out=self.dir / "main-replay" / "replay.jsonl", expected=replay_set.ids)
            probes = [r for r in replayed if r.rollout_id in replay_set.probes]
            share = sum(1 for r in probes if r.reward > 0) / len(probes) if probes else None
            control_run.report.probes_rewarded = share
            write_report(control_run.report, self.dir / "main")
            return MainReplayed(probes_rewarded=share)

        ctx.step(self.key("main-replay"), MainReplayed, run)
        main_replay = {r.rollout_id: r for r in read_jsonl(self.dir / "main-replay" / "replay.jsonl", ReplayRecord)}
        return main_replay, replay_set

    def _evidence(self, control_run: TrainedRun) -> Path | None:
        """Rewritten whenever the generation runs (a resumed one too): its coders read it after the diagnosis.
        Evidence helps the agents; it is not worth the run: if it cannot be written they work without it."""
        report = self.dir / "main" / "report.md"
        try:
            return write_evidence(self.dir / "evidence", generation=self.g, rollouts=control_run.rollouts,
                                  report_md=report.read_text() if report.is_file() else "", repo=self.ctx.repo,
                                  main=self.main_before, run_id=self.ctx.run_id)
        except (OSError, ValueError, git.GitCommandError) as e:
            self.ctx.reporter.phase(f"gen {self.g}: no evidence folder this generation ({failure_text(e, 300)})")
            return None

    def _parents(self, hypotheses: list[Hypothesis]) -> dict[int, tuple[str, str]]:
        """Hypotheses to build on an archived candidate (evolve/archive.py); none unless `archive_parents`."""
        if self.ctx.cfg.archive_parents == 0 or not hypotheses:
            return {}
        chosen = self.ctx.step(self.key("parents"), ParentsChosen, lambda: choose_parents(
            self.ctx, self.main_before, hypotheses, self.key("parents")))
        for k, (cand, _) in sorted(chosen.parents.items()):
            self.ctx.reporter.phase(f"gen {self.g}: candidate {k} builds on archived candidate {cand}")
        return chosen.parents

    def _known(self) -> list[KnownRejection]:
        """Earlier runs' measured rejections under this generation's conditions (skills/known.py), shown."""
        ctx = self.ctx
        if ctx.cfg.rerun_known:
            return []
        known = known_rejections(ctx.skills, ctx.domain.name, self.conditions, ctx.run_id)
        for k in known:
            ctx.reporter.phase(f"gen {self.g}: {k.describe()}; counted as tried (--rerun-known proposes it again)")
        return known

    def _propose(self, control_run: TrainedRun) -> list[Hypothesis]:
        """The proposer's hypotheses, journaled. Whatever it raises or returns is this generation's proposal, not
        the run's: a failure leaves the generation without candidates (its reason journaled and shown), and a
        hypothesis that does not validate is dropped; only budget stops and Ctrl-C stop the run."""
        ctx = self.ctx
        ctx.reporter.phase(f"gen {self.g}: diagnosing ({ctx.proposer.name} proposer)")

        def run() -> Proposed:
            started = time.monotonic()
            try:
                harness_dir = export_tree(ctx.repo, self.main_before, self.dir / "work-propose")
                history = list(ctx.log.of_type(VerdictRecorded))
                pctx = ProposalContext(run_id=ctx.run_id, generation=self.g, domain=ctx.domain.name,
                                       report=control_run.report, harness_dir=harness_dir, skills=ctx.skills,
                                       seed=ctx.cfg.seed, history=history, evidence_dir=self.evidence,
                                       sandbox=ctx.sandbox, known=self._known())
                kept, dropped = _valid(ctx.proposer.propose(pctx, ctx.cfg.candidates), ctx.cfg.candidates)
            except (BudgetExhausted, KeyboardInterrupt):
                raise
            except Exception as e:
                reason = f"the {ctx.proposer.name} proposer failed: {failure_text(e, 1000)}"
                ctx.reporter.phase(f"gen {self.g}: {reason[:400]}; no candidates this generation")
                return Proposed(hypotheses=[], failure=reason, propose_seconds=time.monotonic() - started)
            if dropped:
                ctx.reporter.phase(f"gen {self.g}: {dropped[:400]}")
            return Proposed(hypotheses=kept, failure=dropped, propose_seconds=time.monotonic() - started)

        data = ctx.step(self.key("propose"), Proposed, run)
        return list(data.hypotheses)


def _valid(hypotheses: object, k: int) -> tuple[list[Hypothesis], str]:
    """(the first k hypotheses that validate; what was dropped and why, or "")."""
    if not isinstance(hypotheses, list | tuple):
        return [], f"the proposer returned {type(hypotheses).__name__}, not a list of hypotheses"
    kept: list[Hypothesis] = []
    problems = []
    for i, h in enumerate(hypotheses):
        if len(kept) == k:
            problems.append(f"kept the first {k} of {len(hypotheses)} hypotheses")
            break
        try:
            data = dict(h) if isinstance(h, Hypothesis) else h  # fields as they are: a dump would not survive them
            kept.append(Hypothesis.model_validate(data))
        except ValidationError as e:
            why = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'hypothesis'}: {str(err['msg'])[:150]}"
                            for err in e.errors()[:3])
            problems.append(f"dropped hypothesis {i}: {why}")
        except (ValueError, TypeError, RecursionError) as e:
            problems.append(f"dropped hypothesis {i}: {failure_text(e, 300)}")
    return kept, "; ".join(problems)[:2000]


def _same_rollouts(rerun: Path, control: TrainedRun) -> bool:
    """The rerun generated exactly what main's run did, completion for completion."""
    try:
        rows = read_jsonl(rerun, RolloutRecord)
    except (OSError, ValueError):
        return False
    return bool(rows) and [(r.task_id, r.completion) for r in rows] == [(r.task_id, r.completion)
                                                                       for r in control.rollouts]


def guard_labels(ctx: RunContext, g: int) -> list[str]:
    """Labels that mark a rollout invalid in generation g: the domain's, plus every diagnostic label promoted
    (on evidence) in an earlier generation of this run."""
    labels = list(ctx.domain.invalid_labels)
    promoted = {v.cand_id for v in ctx.log.of_type(VerdictRecorded)
                if v.verdict == "promoted" and v.kind == "diagnostic"}
    for stage in ctx.log.of_type(StageDone):
        gen = CandidateId.parse(stage.cand_id).g
        if stage.stage == "replay" and stage.cand_id in promoted and gen < g:
            evidence = replay_evidence(stage)
            labels += [lab.label for lab in (evidence.new_labels if evidence else []) if lab.passed]
    return sorted(set(labels))
