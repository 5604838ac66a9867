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
from meta_agent.contract import ReplayRecord, read_jsonl
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
from meta_agent.evolve.noise_floor import NoiseFloor
from meta_agent.evolve.search_budget import proposal_slots
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
from meta_agent.report.render import write_report
from meta_agent.sealed import sealed_seed
from meta_agent.skills.known import KnownRejection, known_rejections
from meta_agent.training import TrainedRun, load_trained


class Generation:
    def __init__(self, ctx: RunContext, g: int, policy: Path, history: Path | None) -> None:
        self.ctx, self.g, self.policy, self.history = ctx, g, policy, history
        self.main_before = ""
        self.conditions = ""
        """What this generation's backtests run under (evolve/conditions.py), for the evidence they leave."""
        self.noise_floor = 0.0
        self.evidence: Path | None = None

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
        noise = NoiseFloor(ctx, g, self.main_before, self.policy, self.history)
        noise_runs = self._main_and_noise(noise)
        control_run = load_trained(self.dir / "main", ctx.domain, str(ctx.root_policy), ctx.tasks_file)
        ctx.reporter.phase(f"gen {g}: evaluating main on the sealed selection split")
        ctx.step(self.key("control-eval"), Evaluated, lambda: evaluated(evaluate(
            ctx, control_run.checkpoint, self.dir / "control-eval.json", limit=ctx.cfg.selection_limit)))
        control_eval = EvalResult.model_validate_json((self.dir / "control-eval.json").read_text())
        control = Control(run=control_run, eval=control_eval,
                          invalid_share=invalid_share(control_run, ctx.domain.invalid_labels))
        self.noise_floor = noise.measure(control_eval, noise_runs, control_run)
        # What the proposer sees of it: 0 means two training seeds left every greedy answer the same.
        control_run.report.selection_noise = noise.spread() if ctx.cfg.noise_reruns else None
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

    def _main_and_noise(self, noise: NoiseFloor) -> dict[str, Trained]:
        """Main's training and its control evaluation, and beside them (as the executor allows) the noise
        reruns when this generation surely measures the floor (none measured yet, or one too old); the
        reruns' trainings done here, by job key (journaled with the floor, in `NoiseFloor.measure`)."""
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
        if ctx.cfg.noise_reruns and noise.due() and ctx.log.done(self.key("noise"), NoiseMeasured) is None:
            reruns = [noise.rerun_job(i) for i in range(ctx.cfg.noise_reruns)]
            if jobs:
                ctx.reporter.phase(f"gen {g}: {len(reruns)} control-vs-control rerun(s) beside it (noise floor)")
        ran: dict[str, Trained] = {}
        labels = {job.key: job.label for job in [*jobs, *reruns]}
        for job, result in run_jobs(ctx, [*jobs, *reruns]):
            assert isinstance(result, RunJobResult)
            if job.key != self.key("main-train") and noise.failed(job.key, labels[job.key], result):
                continue
            ran[job.key] = result.trained_run(labels[job.key])
            if job.key == self.key("main-train"):
                crashpoint("step/after-work", ctx.run_dir)
                ctx.log.append(ran[job.key], key=job.key)
                if result.evaluated is not None:
                    ctx.log.append(result.evaluated, key=self.key("control-eval"))
        return ran

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

        def run() -> Proposed:
            started = time.monotonic()
            slots, fewer = proposal_slots(ctx.cfg, ctx.run_dir)  # what the search-step budget still pays for
            if fewer:
                ctx.reporter.phase(f"gen {self.g}: {fewer}" + ("" if slots else "; no candidates this generation"))
            if not slots:
                return Proposed(hypotheses=[], failure=fewer, propose_seconds=0.0)
            ctx.reporter.phase(f"gen {self.g}: diagnosing ({ctx.proposer.name} proposer)")
            try:
                harness_dir = export_tree(ctx.repo, self.main_before, self.dir / "work-propose")
                history = list(ctx.log.of_type(VerdictRecorded))
                pctx = ProposalContext(run_id=ctx.run_id, generation=self.g, domain=ctx.domain.name,
                                       report=control_run.report, harness_dir=harness_dir, skills=ctx.skills,
                                       seed=ctx.cfg.seed, history=history, evidence_dir=self.evidence,
                                       sandbox=ctx.sandbox, known=self._known())
                kept, dropped = _valid(ctx.proposer.propose(pctx, slots), slots)
            except (BudgetExhausted, KeyboardInterrupt):
                raise
            except Exception as e:
                reason = f"the {ctx.proposer.name} proposer failed: {failure_text(e, 1000)}"
                ctx.reporter.phase(f"gen {self.g}: {reason[:400]}; no candidates this generation")
                return Proposed(hypotheses=[], failure=reason, propose_seconds=time.monotonic() - started)
            if dropped:
                ctx.reporter.phase(f"gen {self.g}: {dropped[:400]}")
            return Proposed(hypotheses=kept, failure="; ".join(x for x in (fewer, dropped) if x),
                            propose_seconds=time.monotonic() - started)

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
