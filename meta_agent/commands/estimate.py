"""`evolve --dry-run`, and the estimate a real run prints first: the plan, its wall time, its LLM use."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from meta_agent.config import EvolveConfig
from meta_agent.evolve.estimate import (
    Plan,
    Rates,
    cached_rates,
    calibrate,
    estimate_seconds,
    eval_batch_of,
    plan_of,
    rates_key,
    save_rates,
)


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{max(1, minutes)} min"


def plan_table(plan: Plan, cfg: EvolveConfig) -> Table:
    table = Table("the plan (at most: a candidate that fails early costs less)", "", show_edge=False)
    table.add_row("generations x candidates", f"{plan.generations} x {plan.candidates}")
    table.add_row("training runs", f"{plan.training_runs} ({plan.grpo_steps} GRPO steps, {plan.steps} per run)")
    table.add_row("sealed evaluations", f"{plan.evaluations} ({plan.eval_batches} batches)")
    if cfg.proposer == "llm":
        limit = [f"{cfg.budget.llm_tokens:,} tokens" if cfg.budget.llm_tokens else "",
                 f"${cfg.budget.llm_dollars:.2f}" if cfg.budget.llm_dollars else ""]
        bound = " and ".join(x for x in limit if x) or "no LLM budget set (--llm-tokens, --llm-dollars)"
        table.add_row("LLM agent sessions", f"up to {plan.llm_sessions}; spend bounded by {bound}")
    else:
        table.add_row("LLM calls", f"none (the {cfg.proposer} proposer)")
    return table


def estimate(cfg: EvolveConfig, policy: Path, console: Console, *, measure: bool) -> float | None:
    """Print the plan and, where rates are known (or `measure` may calibrate them), its wall time."""
    plan = plan_of(cfg, eval_batch_of(cfg))
    console.print(plan_table(plan, cfg))
    rates: Rates | None = cached_rates(rates_key(cfg, policy))
    if rates is None and measure:
        rates = calibrate(cfg, policy, lambda text: console.print(text, highlight=False, soft_wrap=True))
        save_rates(rates)
    if rates is None:
        console.print("no time estimate yet: `meta-agent evolve ... --dry-run` measures this machine once "
                      "(about two training steps)", soft_wrap=True)
        return None
    seconds = estimate_seconds(plan, rates)
    learned = f", scaled x{rates.correction():.2f} by {len(rates.corrections)} earlier run(s)" \
        if rates.corrections else ""
    console.print(f"[bold]estimate[/] about {_duration(seconds)} ({seconds:.0f} s) of wall time on this machine "
                  f"(a training run starts in {rates.train_start_s:.0f} s, a GRPO step {rates.step_s:.1f} s, an "
                  f"evaluation batch of {rates.eval_batch} {rates.eval_batch_s:.1f} s; measured {rates.measured}"
                  f"{learned})", highlight=False, soft_wrap=True)
    minutes = cfg.budget.wall_minutes
    if minutes is not None and minutes * 60 < seconds:
        console.print(f"[yellow]warning:[/] --budget-minutes {minutes:g} is shorter than the plan's estimate "
                      f"({_duration(seconds)}): the run will stop early, keeping what it finished; "
                      "`meta-agent resume RUN` continues it", soft_wrap=True)
    return seconds
