"""A generation's training backtests, handed to the run's executor; each result is journaled by the
driver the moment it arrives, so a driver killed meanwhile resumes by running only the jobs whose
result is not in the journal."""

from __future__ import annotations

from meta_agent.crashpoints import crashpoint
from meta_agent.evolve.context import RunContext
from meta_agent.execution.jobs import JobEnv, TrainJob
from meta_agent.journal import StageDone
from meta_agent.llm.text import bound


def run_backtests(ctx: RunContext, g: int, jobs: list[TrainJob]) -> None:
    todo = [job for job in jobs if ctx.log.done(job.key, StageDone) is None]
    if not todo:
        return
    ctx.budget.check(todo[0].key)
    where = ctx.executor.name + (f", {ctx.cfg.executor.parallel} at a time" if ctx.cfg.executor.parallel else "")
    ctx.reporter.phase(f"gen {g}: {len(todo)} training backtest(s) of {ctx.cfg.steps} steps + selection eval "
                       f"({where})")
    env = JobEnv(domain=ctx.domain, sandbox=ctx.sandbox, repo=ctx.repo,
                 on_step=lambda _n: ctx.reporter.training_step())
    for job, result in ctx.executor.run(todo, env):
        crashpoint("step/after-work", ctx.run_dir)
        ctx.log.append(StageDone(cand_id=job.stage_id, **result.model_dump()), key=job.key)
        if not ctx.executor.in_driver:  # a worker's steps are not seen one by one: count them as it ends
            for _ in range(job.steps):
                ctx.reporter.training_step()
        ctx.reporter.phase(f"gen {g}: {job.stage_id}: training backtest "
                           f"{'done' if result.passed else 'failed'}: {bound(result.reason, 300)}")
