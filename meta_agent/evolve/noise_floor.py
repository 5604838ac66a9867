"""The noise floor of a generation: control-vs-control reruns of main under other seeds.

A candidate's selection delta counts only above the floor: the largest paired |delta| between main's
evaluation and a rerun of main's training under another seed (one drawn from meta-agent's secret, never
from anything a harness can read), and never below one task's flip. A floor measured in an earlier
generation is reused while it still describes the policy (`noise_refresh`, or main's score moved by more
than it). A rerun that fails is said and left out; one that reproduces main's rollouts exactly shows a
harness that ignores its seed, and the floor is held at its minimum.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from meta_agent.contract import RolloutRecord, read_jsonl
from meta_agent.domains.base import EvalResult
from meta_agent.evolve.context import RunContext
from meta_agent.evolve.steps import evaluate, run_jobs, train_job
from meta_agent.execution.jobs import RunJob, RunJobResult
from meta_agent.journal import Evaluated, NoiseMeasured, Trained
from meta_agent.journal_keys import gen_dir, gen_key
from meta_agent.llm.text import bound
from meta_agent.sealed import sealed_seed
from meta_agent.stats import paired_bootstrap_ci
from meta_agent.training import TrainedRun


class NoiseFloor:
    """Generation `g`'s floor, for main's training at `main_before` from `policy` (journaled under the
    generation's keys, so a resumed run neither retrains nor re-measures it)."""

    def __init__(self, ctx: RunContext, g: int, main_before: str, policy: Path, history: Path | None) -> None:
        self.ctx, self.g, self.main_before, self.policy, self.history = ctx, g, main_before, policy, history
        self.failures: dict[str, str] = {}
        """Reruns that failed (by job key): why."""

    @property
    def dir(self) -> Path:
        return self.ctx.run_dir / gen_dir(self.g)

    def key(self, *parts: object) -> str:
        return gen_key(self.g, *parts)

    def failed(self, key: str, label: str, result: RunJobResult) -> bool:
        """Whether a noise rerun failed; if so it is remembered and said, and the run goes on without it (main's
        harness may fail under another seed: a hostile or flaky main must not stop the run, or its resume)."""
        if result.error is None:
            return False
        self.failures[key] = result.error
        self.ctx.reporter.phase(f"gen {self.g}: {label} failed, and the noise floor is measured without it: "
                                f"{bound(result.error, 300)}")
        return True

    def due(self) -> bool:
        """Whether the floor is measured this generation whatever main scores (else `_last` decides)."""
        last = max((j for j in range(self.g) if (m := self.ctx.log.done(gen_key(j, "noise"), NoiseMeasured))
                    and m.deltas), default=None)
        return last is None or self.g - last >= self.ctx.cfg.noise_refresh

    def rerun_job(self, i: int) -> RunJob:
        ctx = self.ctx
        out = self.dir / f"noise-{i}"
        inline_eval: dict[str, Any] = {} if ctx.cfg.executor.eval_shards > 1 else dict(
            eval_split="selection", eval_out=out / "eval.json", eval_limit=ctx.cfg.selection_limit)
        # The rerun's seed comes from meta-agent's secret, never from anything a harness can read or set.
        seed = sealed_seed("noise-rerun", f"{ctx.cfg.seed}/{self.g}/{i}") % 2**31
        return train_job(ctx, self.key(f"noise-{i}"), f"control-vs-control rerun {i + 1}", self.main_before,
                         self.policy, seed, self.history, out, self.dir / f"work-noise-{i}", tolerated=True,
                         **inline_eval)

    def measure(self, control_eval: EvalResult, ran: dict[str, Trained], control_run: TrainedRun) -> float:
        """Control-vs-control: main rerun with another seed; the paired |delta| is the noise floor, never below one
        task's flip. `ran`: the reruns the generation already trained beside main (and evaluated, unless evaluations are
        sharded). A rerun that reproduces main's rollouts exactly shows a harness that ignores its seed: the
        floor it would measure (0) is no floor, and the run says so."""
        ctx = self.ctx
        if ctx.cfg.noise_reruns == 0:
            return 1 / max(1, len(control_eval.results))  # unmeasured: one task's flip is still no evidence
        earlier = self._last(control_eval.score.mean)
        if earlier is not None:
            return earlier

        def measure() -> NoiseMeasured:
            todo = [job for i in range(ctx.cfg.noise_reruns)
                    if (job := self.rerun_job(i)).key not in ran and job.key not in self.failures]
            for job in todo:
                ctx.reporter.phase(f"gen {self.g}: {job.label} (noise floor)")
            trained = dict(ran)
            labels = {job.key: job.label for job in todo}
            for done, result in run_jobs(ctx, list(todo)):
                assert isinstance(result, RunJobResult)
                if not self.failed(done.key, labels[done.key], result) and result.trained is not None:
                    trained[done.key] = result.trained
            deltas, train_s, eval_s, pinned, failed = [], 0.0, 0.0, [], []
            for i in range(ctx.cfg.noise_reruns):
                out = self.dir / f"noise-{i}"
                if self.key(f"noise-{i}") in self.failures:
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

    def spread(self) -> float:
        """What the floor in force measured between seeds, before its minimum: the report's `selection_noise`."""
        for j in range(self.g, -1, -1):
            measured = self.ctx.log.done(gen_key(j, "noise"), NoiseMeasured)
            if measured is not None:
                return max(measured.deltas, default=0.0)
        return 0.0

    def _last(self, score: float) -> float | None:
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


def _same_rollouts(rerun: Path, control: TrainedRun) -> bool:
    """The rerun generated exactly what main's run did, completion for completion."""
    try:
        rows = read_jsonl(rerun, RolloutRecord)
    except (OSError, ValueError):
        return False
    return bool(rows) and [(r.task_id, r.completion) for r in rows] == [(r.task_id, r.completion)
                                                                       for r in control.rollouts]
