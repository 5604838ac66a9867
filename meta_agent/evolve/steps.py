"""The two steps every part of a run repeats, as executor jobs (execution/jobs.py): train a harness
commit, evaluate a policy on a sealed split (in `executor.eval_shards` shards). With the default
executor they run in the driver, one after another, exactly as a direct call would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from meta_agent.domains.base import EvalResult, Split, merge_shards
from meta_agent.evolve.context import RunContext
from meta_agent.execution.jobs import Job, JobEnv, RunJob, RunJobResult, TrainJob
from meta_agent.fsutil import atomic_write_text
from meta_agent.journal import Evaluated, Trained
from meta_agent.train_memo import read_reused


def run_jobs(ctx: RunContext, jobs: list[Job]) -> Iterator[tuple[Job, BaseModel]]:
    """The jobs' results from the run's executor, as they finish; the progress bar counts their steps."""
    if not jobs:
        return
    env = JobEnv(domain=ctx.domain, sandbox=ctx.sandbox, repo=ctx.repo,
                 on_step=ctx.reporter.training_step,
                 on_eval=ctx.reporter.tasks_answered)
    for job, result in ctx.executor.run(jobs, env):
        reused = reused_training(job)
        if reused:
            ctx.reporter.phase(reused)
        if not ctx.executor.in_driver or reused:  # steps not seen one by one: count them as it ends
            for _ in range(job_steps(job)):
                ctx.reporter.training_step()
        yield job, result


def reused_training(job: Job) -> str | None:
    """What a job that copied an earlier run's identical training instead of training says (`train_memo`)."""
    if isinstance(job, RunJob) and job.out:
        label, out = job.label, Path(job.out)
    elif isinstance(job, TrainJob):
        label, out = f"{job.stage_id} (backtest)", Path(job.cand_dir) / job.rung
    else:
        return None
    record = read_reused(out)
    if record is None:
        return None
    return (f"{label}: reused the identical training stored {record['when']} from {record['from']} "
            f"({record['seconds']:.0f} s of training not repeated; reuse_across_runs: false trains again)")


def job_steps(job: Job) -> int:
    trains = not isinstance(job, RunJob) or job.commit is not None
    return int(getattr(job, "steps", 0)) if trains else 0


def run_job(ctx: RunContext, key: str, label: str, policy: Path, **fields: Any) -> RunJob:
    """A `RunJob` of this run (fields as in `RunJob`; paths may be `Path`s)."""
    data = {k: str(v) if isinstance(v, Path) else v for k, v in fields.items()}
    return RunJob(key=key, label=label, config=ctx.cfg.model_dump(mode="json"), harness=str(ctx.repo.working_dir),
                  root_policy=str(ctx.root_policy), tasks_file=str(ctx.tasks_file), policy=str(policy), **data)


def train_job(ctx: RunContext, key: str, label: str, commit: str, policy: Path, seed: int, history: Path | None,
              out: Path, work: Path, steps: int | None = None, **fields: Any) -> RunJob:
    """Train `policy` under harness@commit into `out` (rollouts, report, checkpoint); `steps` (default the
    run's) for a longer or shorter run; `eval_split`, `eval_out`, `eval_limit` also evaluate the checkpoint."""
    return run_job(ctx, key, label, policy, commit=commit, seed=seed, history=history, out=out, work=work,
                   steps=ctx.cfg.steps if steps is None else steps, **fields)


def eval_jobs(ctx: RunContext, key: str, label: str, policy: Path, out: Path, split: Split,
              limit: int | None) -> list[RunJob]:
    """The sealed evaluation of `policy` as one job, or as `executor.eval_shards` jobs writing out.shard-I.json."""
    n = ctx.cfg.executor.eval_shards
    if n == 1:
        return [run_job(ctx, key, label, policy, eval_split=split, eval_out=out, eval_limit=limit)]
    return [run_job(ctx, f"{key}#{i}", f"{label} (shard {i + 1}/{n})", policy, eval_split=split,
                    eval_out=shard_file(out, i), eval_limit=limit, shard=(i, n)) for i in range(n)]


def shard_file(out: Path, i: int) -> Path:
    return out.with_name(f"{out.stem}.shard-{i}{out.suffix}")


def finish_eval(ctx: RunContext, out: Path) -> EvalResult:
    """The evaluation written to `out`, merging its shards' files into it first when it was sharded."""
    n = ctx.cfg.executor.eval_shards
    if n > 1 and not out.is_file():
        parts = [EvalResult.model_validate_json(shard_file(out, i).read_text()) for i in range(n)]
        atomic_write_text(out, merge_shards(parts).model_dump_json(indent=2))
    return EvalResult.model_validate_json(out.read_text())


def results(ctx: RunContext, jobs: list[RunJob]) -> dict[str, RunJobResult]:
    """Run the jobs; each one's result by key (a failure stops the run with the job's label and reason)."""
    by_key = {job.key: job for job in jobs}
    out: dict[str, RunJobResult] = {}
    for job, result in run_jobs(ctx, list(jobs)):
        assert isinstance(result, RunJobResult)
        out[job.key] = result.ok(by_key[job.key].label)
    return out


def evaluate(ctx: RunContext, policy: Path, out: Path, split: Split = "selection", limit: int | None = None,
             label: str = "the sealed evaluation") -> EvalResult:
    """The sealed evaluation of `policy`, also written to `out` (which may sit in a dir the harness wrote)."""
    out.unlink(missing_ok=True)
    results(ctx, eval_jobs(ctx, f"eval:{out}", label, policy, out, split, limit))
    return finish_eval(ctx, out)


def evaluated(result: EvalResult) -> Evaluated:
    return Evaluated(score=result.score.mean, eval_seconds=result.wall_time)


def train_and_report(ctx: RunContext, commit: str, policy: Path, seed: int, history: Path | None,
                     out: Path, work: Path, steps: int | None = None, label: str = "training") -> Trained:
    """Train `policy` under harness@commit into `out` (rollouts, report, checkpoint); `steps` (default the
    run's) for a longer or shorter run."""
    job = train_job(ctx, f"train:{out}", label, commit, policy, seed, history, out, work, steps)
    return results(ctx, [job])[job.key].trained_run(label)
