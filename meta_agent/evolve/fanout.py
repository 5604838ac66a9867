"""A generation's training backtests (and the static arm's generation beside them), handed to the
run's executor; each result is journaled by the driver the moment it arrives, so a driver killed
meanwhile resumes by running only the jobs whose result is not in the journal."""

from __future__ import annotations

from meta_agent.crashpoints import crashpoint
from meta_agent.evolve.context import RunContext
from meta_agent.evolve.steps import run_jobs
from meta_agent.execution.jobs import Job, RunJob, RunJobResult, TrainJob
from meta_agent.journal import StageDone
from meta_agent.llm.text import bound
from meta_agent.verdicts import StageResult


def run_backtests(ctx: RunContext, g: int, jobs: list[TrainJob], also: list[RunJob] | None = None) -> None:
    """`jobs`' StageDone under their keys; `also`: other training runs of the generation (their Trained)."""
    todo: list[Job] = [job for job in jobs if ctx.log.done(job.key, StageDone) is None]
    todo += also or []
    if not todo:
        return
    ctx.budget.check(todo[0].key)
    where = ctx.executor.name + (f", {ctx.cfg.executor.parallel} at a time" if ctx.cfg.executor.parallel else "")
    extra = "".join(f" + {job.label}" for job in also or [])
    backtests = [job for job in todo if isinstance(job, TrainJob)]
    what = (f"{len(backtests)} training backtest(s) of {backtests[0].steps} steps + selection eval" if backtests
            else "no backtest")
    if backtests and backtests[0].rung == "confirm":
        what = f"confirmation rung: {len(backtests)} candidate(s) {backtests[0].steps} more steps + selection eval"
    ctx.reporter.phase(f"gen {g}: {what}{extra} ({where})")
    for job, result in run_jobs(ctx, todo):
        if isinstance(job, RunJob):
            assert isinstance(result, RunJobResult)
            trained = result.trained_run(job.label)
            crashpoint("step/after-work", ctx.run_dir)
            ctx.log.append(trained, key=job.key)
            ctx.reporter.phase(f"gen {g}: {job.label} trained")
            continue
        assert isinstance(job, TrainJob) and isinstance(result, StageResult)
        crashpoint("step/after-work", ctx.run_dir)
        ctx.log.append(StageDone(cand_id=job.stage_id, **result.model_dump()), key=job.key)
        ctx.reporter.phase(f"gen {g}: {job.stage_id}: {'training backtest' if job.rung == 'train' else 'confirmation'} "
                           f"{'done' if result.passed else 'failed'}: {bound(result.reason, 300)}")
