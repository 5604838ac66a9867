"""The two steps every part of a run repeats: train a harness commit, evaluate a policy on a sealed split."""

from __future__ import annotations

from pathlib import Path

from meta_agent.domains.base import EvalResult
from meta_agent.evolve.context import RunContext
from meta_agent.fsutil import atomic_write_text, fresh_dir
from meta_agent.journal import Evaluated, Trained
from meta_agent.report.render import write_report
from meta_agent.training import train_commit


def evaluate(ctx: RunContext, policy: Path, out: Path, split: str = "selection", limit: int | None = None
             ) -> EvalResult:
    """The sealed evaluation of `policy`, also written to `out` (which may sit in a dir the harness wrote)."""
    result = ctx.domain.evaluate(policy, split, limit=limit, root=ctx.root_policy)  # type: ignore[arg-type]
    atomic_write_text(out, result.model_dump_json(indent=2))
    return result


def evaluated(result: EvalResult) -> Evaluated:
    return Evaluated(score=result.score.mean, eval_seconds=result.wall_time)


def train_and_report(ctx: RunContext, commit: str, policy: Path, seed: int, history: Path | None,
                     out: Path, work: Path, steps: int | None = None) -> Trained:
    """Train `policy` under harness@commit into `out` (rollouts, report, checkpoint); `steps` (default the
    run's) for a longer or shorter run."""
    kwargs = ctx.train_kwargs(policy, seed, history)
    if steps is not None:
        kwargs["steps"] = steps
    run = train_commit(repo=ctx.repo, commit=commit, out_dir=fresh_dir(out), work_dir=work, **kwargs)
    write_report(run.report, out)
    return Trained(out=str(out), checkpoint=str(run.checkpoint), reward=run.report.reward_mean,
                   train_seconds=run.output.seconds)
