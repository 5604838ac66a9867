"""The static control arm: the unchanged initial harness trained with the same policy chain, seeds and
steps as the evolved run, compared with it on the sealed test split at the end.

Its generation g depends only on its own generation g-1, so it runs beside generation g's candidate
backtests (one more executor job); a generation in which main still is the initial harness, trained
from the same policy, is the static arm's too and is not trained twice. `finalize` trains whatever
of the chain is still missing (e.g. a run resumed from a journal written before this fan-out)."""

from __future__ import annotations

from pathlib import Path

from meta_agent.evolve.context import RunContext
from meta_agent.evolve.steps import results, train_job
from meta_agent.execution.jobs import RunJob
from meta_agent.journal import GenerationDone, RunStarted, Trained
from meta_agent.journal_keys import RUN_START, final_key, gen_dir, gen_key


def _initial(ctx: RunContext) -> str:
    started = ctx.log.done(RUN_START, RunStarted)
    assert started is not None, "the static arm is trained only after the run started"
    return started.initial_main


def _out(ctx: RunContext, g: int) -> Path:
    return ctx.run_dir / "static" / f"g{g}"


def _reuses_main(ctx: RunContext, g: int, policy: Path) -> bool:
    gen = ctx.log.done(gen_key(g, "done"), GenerationDone)
    return gen is not None and gen.main_before == _initial(ctx) and Path(gen.policy) == policy


def _after(ctx: RunContext, g: int, policy: Path, history: Path | None) -> tuple[Path, Path | None]:
    """The static arm's policy and history after its generation g, which started from `policy`."""
    gen = ctx.log.done(gen_key(g, "done"), GenerationDone)
    if gen is not None and _reuses_main(ctx, g, policy):
        return ctx.run_dir / gen_dir(g) / "main" / "checkpoint", Path(gen.history)
    return _out(ctx, g) / "checkpoint", _out(ctx, g) / "rollouts.verified.jsonl"


def _job(ctx: RunContext, g: int, policy: Path, history: Path | None) -> RunJob:
    return train_job(ctx, final_key(f"static-g{g}"), f"the static arm's generation {g}", _initial(ctx), policy,
                     ctx.cfg.seed + g, history, _out(ctx, g), ctx.run_dir / "static" / f"work-{g}")


def static_jobs(ctx: RunContext, g: int, main_before: str, gen_policy: Path) -> list[RunJob]:
    """The static arm's generation g, to run beside generation g's backtests: none when there is no static
    arm, when it is done, when main's own run of generation g is it, or when an earlier generation of the
    chain is missing (then `finalize` trains the chain in order)."""
    if ctx.cfg.control != "static" or ctx.log.done(final_key(f"static-g{g}"), Trained) is not None:
        return []
    policy, history = ctx.root_policy, None
    for j in range(g):
        if not _reuses_main(ctx, j, policy) and ctx.log.done(final_key(f"static-g{j}"), Trained) is None:
            return []
        policy, history = _after(ctx, j, policy, history)
    if main_before == _initial(ctx) and gen_policy == policy:
        return []
    return [_job(ctx, g, policy, history)]


def static_policy(ctx: RunContext) -> Path:
    """The static arm's final policy, training whatever of its chain is not journaled yet."""
    policy, history = ctx.root_policy, None
    for g in range(ctx.cfg.generations):
        if not _reuses_main(ctx, g, policy) and ctx.log.done(final_key(f"static-g{g}"), Trained) is None:
            ctx.reporter.phase(f"static control arm: generation {g} under the initial harness")
            job = _job(ctx, g, policy, history)
            ctx.log.append(results(ctx, [job])[job.key].trained_run(job.label), key=job.key)
        policy, history = _after(ctx, g, policy, history)
    return policy
