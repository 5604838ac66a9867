"""One generation of the evolve loop, as in ARCHITECTURE.md's data flow (no CLI or setup details here).

train P_g under main (this run is also the control) -> evaluate it -> rollout report (+ hacking
probes) -> proposer hypotheses -> per candidate: implement on a branch -> static -> replay ->
train -> gate -> merge winners -> skill evidence. Every step is journaled in the event log under a
key; on resume a step whose key is there is not redone.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import git

from meta_agent.agents.base import Hypothesis, Outcome, ProposalContext, Proposer
from meta_agent.backtest.models import Verdict
from meta_agent.backtest.stats import paired_bootstrap_ci
from meta_agent.backtest.train_stage import Control, invalid_share
from meta_agent.candidate import CandidateRun, note_for
from meta_agent.config import EvolveConfig
from meta_agent.contract import ReplayRecord, RolloutRecord, read_jsonl, write_jsonl
from meta_agent.domains import Domain, EvalResult
from meta_agent.errors import BudgetExhausted
from meta_agent.fsutil import atomic_write_text, fresh_dir
from meta_agent.gitops import add_note, export_tree, format_message, is_merged, merge_no_ff
from meta_agent.harness_runner import HarnessRunner
from meta_agent.lineage import EventLog
from meta_agent.report.render import write_report
from meta_agent.skills.evidence import record as record_evidence
from meta_agent.skills.model import Evidence
from meta_agent.skills.store import SkillSet
from meta_agent.training import TrainedRun, load_trained, train_commit
from sandboxes import Sandbox


class Reporter(Protocol):
    def phase(self, text: str) -> None: ...

    def training_step(self) -> None: ...


@dataclass
class Budget:
    wall_seconds: float | None = None
    started: float = field(default_factory=time.monotonic)
    extra_checks: list[Callable[[], str | None]] = field(default_factory=list)

    def check(self, before: str) -> None:
        if self.wall_seconds is not None and time.monotonic() - self.started > self.wall_seconds:
            raise BudgetExhausted(f"wall-clock budget of {self.wall_seconds / 60:.1f} min used up before {before}")
        for check in self.extra_checks:
            reason = check()
            if reason:
                raise BudgetExhausted(f"{reason} (before {before})")


@dataclass
class RunContext:
    cfg: EvolveConfig
    run_dir: Path
    run_id: str
    repo: git.Repo
    domain: Domain
    sandbox: Sandbox
    root_policy: Path
    tasks_file: Path
    skills: SkillSet
    proposer: Proposer
    log: EventLog
    reporter: Reporter
    budget: Budget
    kit_dir: Path
    epoch: int
    """Run start (unix seconds): commit dates derive from it, so a resumed run writes identical commits."""

    def step(self, key: str, fn: Callable[[], dict[str, Any]], type_: str = "step_done") -> dict[str, Any]:
        """Run `fn` unless `key` finished earlier; journal its result."""
        done = self.log.done(key)
        if done is not None:
            return done
        self.budget.check(key)
        data = fn()
        self.log.append(type_, data, key=key)
        return data

    def when(self, g: int, slot: int) -> str:
        return f"{self.epoch + 1000 * g + slot} +0000"

    def train_kwargs(self, policy: Path, seed: int, history: Path | None) -> dict[str, Any]:
        sb = self.cfg.sandbox
        return dict(domain=self.domain, sandbox=self.sandbox, limits=sb.limits(), policy=policy,
                    root_policy=self.root_policy, steps=self.cfg.steps, seed=seed, tasks_file=self.tasks_file,
                    history=history, train_timeout=sb.train_timeout_s,
                    on_step=lambda _n: self.reporter.training_step())


def evaluate(ctx: RunContext, policy: Path, out: Path, split: str = "selection", limit: int | None = None
             ) -> EvalResult:
    result = ctx.domain.evaluate(policy, split, limit=limit, root=ctx.root_policy)  # type: ignore[arg-type]
    atomic_write_text(out, result.model_dump_json(indent=2))  # `out` may sit in a dir the harness wrote
    return result


def _eval_step(result: EvalResult) -> dict[str, Any]:
    return {"score": result.score.mean, "eval_seconds": result.wall_time}


def train_and_report(ctx: RunContext, commit: str, policy: Path, seed: int, history: Path | None,
                     out: Path, work: Path) -> dict[str, Any]:
    run = train_commit(repo=ctx.repo, commit=commit, out_dir=fresh_dir(out), work_dir=work,
                       **ctx.train_kwargs(policy, seed, history))
    write_report(run.report, out)
    return {"out": str(out), "checkpoint": str(run.checkpoint), "reward": run.report.reward_mean,
            "train_seconds": run.output.seconds}


@dataclass
class Generation:
    ctx: RunContext
    g: int
    policy: Path
    history: Path | None
    main_before: str = ""
    noise_floor: float = 0.0

    @property
    def dir(self) -> Path:
        return self.ctx.run_dir / f"gen-{self.g:03d}"

    @property
    def seed(self) -> int:
        return self.ctx.cfg.seed + self.g

    def key(self, *parts: object) -> str:
        return "/".join([f"g{self.g}", *map(str, parts)])

    def run(self) -> dict[str, Any]:
        ctx, g = self.ctx, self.g
        done = ctx.log.done(self.key("done"))
        if done is not None:
            return done
        self.main_before = ctx.step(self.key("start"), lambda: {"main": ctx.repo.commit("main").hexsha,
                                                                "t": time.time()})["main"]
        ctx.reporter.phase(f"gen {g}: training the policy under main ({ctx.cfg.steps} steps)")
        ctx.step(self.key("main-train"), lambda: train_and_report(
            ctx, self.main_before, self.policy, self.seed, self.history, self.dir / "main", self.dir / "work-main"))
        control_run = load_trained(self.dir / "main", ctx.domain, str(ctx.root_policy), ctx.tasks_file)
        ctx.reporter.phase(f"gen {g}: evaluating main on the sealed selection split")
        ctx.step(self.key("control-eval"), lambda: _eval_step(evaluate(
            ctx, control_run.checkpoint, self.dir / "control-eval.json", limit=ctx.cfg.selection_limit)))
        control_eval = EvalResult.model_validate_json((self.dir / "control-eval.json").read_text())
        control = Control(run=control_run, eval=control_eval,
                          invalid_share=invalid_share(control_run, ctx.domain.invalid_labels))
        self.noise_floor = self._noise(control_eval)
        main_replay, replay_set, replay_records = self._main_replay(control_run)
        hypotheses = self._propose(control_run)
        verdicts = []
        for k, hypothesis in enumerate(hypotheses):
            verdicts.append(self._candidate(k, hypothesis, control, main_replay, replay_set, replay_records))
        next_policy = self._merge(verdicts, control_run)
        self._evidence(verdicts, hypotheses)
        data = {
            "run_id": ctx.run_id, "gen": g, "main_before": self.main_before,
            "main_after": ctx.repo.commit("main").hexsha, "policy": str(self.policy), "next_policy": next_policy,
            "control_score": control_eval.score.mean, "control_low": control_eval.score.low,
            "control_high": control_eval.score.high, "dominant": control_run.report.dominant,
            "history": str(self.dir / "main" / "rollouts.verified.jsonl"), "noise_floor": self.noise_floor,
            "time": self._time_spent(),
        }
        ctx.log.append("generation_done", data, key=self.key("done"))
        return data

    def _time_spent(self) -> dict[str, float]:
        """Where this generation's wall time went (for `bench/loop_overhead.py` and the summary)."""
        ctx, spent = self.ctx, {"train": 0.0, "eval": 0.0, "proposer": 0.0}
        for e in ctx.log.events:
            key, d = e.get("key") or "", e["data"]
            if not key.startswith(f"g{self.g}/"):
                continue
            spent["train"] += float(d.get("train_seconds", 0.0))
            spent["eval"] += float(d.get("eval_seconds", 0.0))
            spent["proposer"] += float(d.get("propose_seconds", 0.0)) + float(d.get("implement_seconds", 0.0))
            metrics = d.get("metrics") or {}
            spent["train"] += float(metrics.get("train_seconds", 0.0))
            spent["eval"] += float(metrics.get("eval_seconds", 0.0))
        start = ctx.log.done(self.key("start"))
        spent["wall"] = time.time() - float(start["t"]) if start and "t" in start else 0.0
        return spent

    def _noise(self, control_eval: EvalResult) -> float:
        """Control-vs-control: main rerun with another seed; the paired |delta| is the noise floor."""
        ctx = self.ctx
        if ctx.cfg.noise_reruns == 0:
            return 0.0
        first = ctx.log.done("g0/noise")
        if first is not None and self.g > 0:
            return float(first["noise_floor"])

        def measure() -> dict[str, Any]:
            deltas, train_s, eval_s = [], 0.0, 0.0
            for i in range(ctx.cfg.noise_reruns):
                ctx.reporter.phase(f"gen {self.g}: control-vs-control rerun {i + 1} (noise floor)")
                out = self.dir / f"noise-{i}"
                trained = train_and_report(ctx, self.main_before, self.policy, self.seed + 10_000 * (i + 1),
                                           self.history, out, self.dir / "work-noise")
                rerun = evaluate(ctx, out / "checkpoint", out / "eval.json", limit=ctx.cfg.selection_limit)
                train_s += trained["train_seconds"]
                eval_s += rerun.wall_time
                ids = [r.task_id for r in control_eval.results]
                d = paired_bootstrap_ci([rerun.per_task()[t] for t in ids], [control_eval.per_task()[t] for t in ids])
                deltas.append(abs(d.mean))
            return {"noise_floor": max(deltas), "deltas": deltas, "train_seconds": train_s, "eval_seconds": eval_s}

        return float(ctx.step(self.key("noise"), measure)["noise_floor"])

    def _main_replay(self, control_run: TrainedRun
                     ) -> tuple[dict[str, ReplayRecord], Path, list[RolloutRecord]]:
        """Main re-scores its own rollouts plus the domain's hacking probes: the baseline every candidate's
        replay is compared with, and how many probes main's reward falls for."""
        ctx = self.ctx
        replay_dir = self.dir / "replay-input"
        replay_set = replay_dir / "rollouts.jsonl"
        tasks = [t for t in ctx.domain.tasks("train") if t.id in {r.task_id for r in control_run.rollouts}]
        records = control_run.rollouts + ctx.domain.hacking_probes(tasks)

        def run() -> dict[str, Any]:
            write_jsonl(replay_set, records)
            work = export_tree(ctx.repo, self.main_before, self.dir / "work-replay")
            with HarnessRunner(ctx.sandbox, work, commit=self.main_before, readable=[replay_dir, ctx.tasks_file.parent],
                               writable=[self.dir / "main-replay"], limits=ctx.cfg.sandbox.limits()) as h:
                replayed = h.replay(rollouts=replay_set, tasks=ctx.tasks_file,
                                    out=self.dir / "main-replay" / "replay.jsonl")
            probes = [r for r in replayed if r.rollout_id.startswith("probe-")]
            share = sum(1 for r in probes if r.reward > 0) / len(probes) if probes else None
            control_run.report.probes_rewarded = share
            write_report(control_run.report, self.dir / "main")
            return {"probes_rewarded": share}

        ctx.step(self.key("main-replay"), run)
        main_replay = {r.rollout_id: r for r in read_jsonl(self.dir / "main-replay" / "replay.jsonl", ReplayRecord)}
        return main_replay, replay_set, records

    def _propose(self, control_run: TrainedRun) -> list[Hypothesis]:
        ctx = self.ctx
        ctx.reporter.phase(f"gen {self.g}: diagnosing ({ctx.proposer.name} proposer)")

        def run() -> dict[str, Any]:
            harness_dir = export_tree(ctx.repo, self.main_before, self.dir / "work-propose")
            history = [e["data"] for e in ctx.log.of_type("verdict")]
            pctx = ProposalContext(run_id=ctx.run_id, generation=self.g, domain=ctx.domain.name,
                                   report=control_run.report, harness_dir=harness_dir, skills=ctx.skills,
                                   seed=ctx.cfg.seed, history=history)
            started = time.monotonic()
            hyps = ctx.proposer.propose(pctx, ctx.cfg.candidates)
            return {"hypotheses": [h.model_dump(mode="json") for h in hyps],
                    "propose_seconds": time.monotonic() - started}

        data = ctx.step(self.key("propose"), run, type_="hypotheses")
        return [Hypothesis.model_validate(h) for h in data["hypotheses"]]

    def _candidate(self, k: int, h: Hypothesis, control: Control, main_replay: dict[str, ReplayRecord],
                   replay_set: Path, replay_records: list[RolloutRecord]) -> Verdict:
        return CandidateRun(self, k, h, control, main_replay, replay_set, replay_records).run()

    def _merge(self, verdicts: list[Verdict], control_run: TrainedRun) -> str:
        """Merge winners into main (best first); returns the policy the next generation starts from."""
        ctx = self.ctx
        winners = [(k, v) for k, v in enumerate(verdicts) if v.promoted]
        winners.sort(key=lambda kv: (kv[1].kind != "validity", -(kv[1].delta or 0.0)))
        for i, (k, v) in enumerate(winners):
            created = ctx.log.done(self.key(f"c{k}", "created"))
            assert created is not None, f"promoted candidate {v.cand_id} has no creation record"
            ctx.step(self.key("merge", f"c{k}"), functools.partial(self._merge_one, v, created, i), type_="merged")
        best = next((k for k, v in winners if v.kind == "performance"), None)
        if best is not None:
            train = ctx.log.done(self.key(f"c{best}", "train"))
            if train is not None:
                return str(train["metrics"]["checkpoint"])
        return str(control_run.checkpoint)

    def _merge_one(self, v: Verdict, created: dict[str, Any], i: int) -> dict[str, Any]:
        ctx = self.ctx
        branch, commit = created["branch"], created["commit"]
        ctx.reporter.phase(f"gen {self.g}: merging {branch}")
        if is_merged(ctx.repo, commit):
            merge = ctx.repo.commit("main").hexsha  # merged before a kill, not yet journaled
        else:
            stages = [e["data"] for e in ctx.log.of_type("stage_done") if e["data"]["cand_id"] == v.cand_id]
            backtest = " ".join(f"{s['stage']}={'pass' if s['passed'] else 'fail'}" for s in stages)
            msg = format_message(f"Merge {branch}: {created['title']}", "",
                                 {"Backtest": backtest, "Verdict": f"promoted ({v.kind}): {v.reason}",
                                  "Candidate": v.cand_id})
            merge = merge_no_ff(ctx.repo, branch, msg, when=ctx.when(self.g, 900 + i))
        add_note(ctx.repo, merge, note_for(v, ctx.log))
        return {"cand_id": v.cand_id, "merge_commit": merge, "branch": branch}

    def _evidence(self, verdicts: list[Verdict], hypotheses: list[Hypothesis]) -> None:
        ctx = self.ctx
        for k, (v, h) in enumerate(zip(verdicts, hypotheses, strict=True)):
            if not h.skills_used:
                continue

            def add(v: Verdict = v, h: Hypothesis = h, k: int = k) -> dict[str, Any]:
                created = ctx.log.done(self.key(f"c{k}", "created")) or {}
                retired = []
                for name in h.skills_used:
                    ev = Evidence(run=ctx.run_id, harness_repo=str(ctx.repo.working_dir),
                                  commit=created.get("commit") or self.main_before, domain=ctx.domain.name,
                                  metric="validity" if v.kind == "validity" else "selection_delta",
                                  delta=v.delta, ci=v.ci, verdict=v.verdict, stage=v.stage,
                                  date=time.strftime("%Y-%m-%d"))
                    try:
                        if record_evidence(ctx.skills, name, ev, ctx.cfg.retire_after):
                            retired.append(name)
                    except KeyError:
                        continue  # a skill named by an LLM hypothesis that the library does not hold
                return {"skills": h.skills_used, "retired": retired}

            ctx.step(self.key(f"c{k}", "evidence"), add, type_="skill_evidence")
        for k, (v, h) in enumerate(zip(verdicts, hypotheses, strict=True)):
            ctx.step(self.key(f"c{k}", "learn"), functools.partial(self._learn, k, v, h), type_="skill_written")

    def _learn(self, k: int, v: Verdict, h: Hypothesis) -> dict[str, Any]:
        """The proposer's skill writer sees the hypothesis, the diff and the measured outcome."""
        ctx = self.ctx
        created = ctx.log.done(self.key(f"c{k}", "created")) or {}
        diff = ctx.repo.git.diff(self.main_before, created["commit"]) if created.get("commit") else ""
        folder = ctx.proposer.learn(Outcome(
            run_id=ctx.run_id, generation=self.g, domain=ctx.domain.name, hypothesis=h, diff=diff,
            verdict=v.model_dump(mode="json"), skills_dir=ctx.run_dir / "skills"))
        if folder is None:
            return {"skill": None}
        skill = ctx.skills.add(folder)
        return {"skill": skill.name, "path": str(folder)}


