"""`meta-agent evolve` and `meta-agent resume`: progress display and the one-screen summary."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown

from meta_agent.config import EvolveConfig
from meta_agent.errors import BudgetExhausted
from meta_agent.evolve import prepare, run
from meta_agent.progress import progress_bar
from meta_agent.report.summary import RunSummary, render_markdown


class RichReporter:
    """Progress in training steps (the dominant cost) with the current phase as the description."""

    def __init__(self, console: Console, cfg: EvolveConfig) -> None:
        steps = cfg.steps
        total = cfg.generations * steps * (1 + cfg.candidates) + cfg.noise_reruns * steps
        if cfg.control == "static":
            total += max(0, cfg.generations - 1) * steps
        self.progress = progress_bar(console)
        self.task = self.progress.add_task("starting", total=total)
        self.console = console

    def phase(self, text: str) -> None:
        self.progress.update(self.task, description=text)
        self.progress.log(text)

    def training_step(self) -> None:
        self.progress.advance(self.task)


def run_evolve(cfg: EvolveConfig, console: Console, resume: bool = False) -> Path:
    reporter = RichReporter(console, cfg)
    with reporter.progress:
        ctx = prepare(cfg, reporter, resume=resume)
        for repair in ctx.repairs:
            console.print(f"[yellow]repaired:[/] {repair}")
        console.print(f"[bold]run[/] {ctx.run_dir}  [bold]harness[/] {ctx.repo.working_dir}  "
                      f"[bold]sandbox[/] {ctx.sandbox.name}  [bold]proposer[/] {ctx.proposer.name}")
        try:
            summary = run(ctx)
        except BudgetExhausted as e:
            console.print(f"[yellow]stopped: {e}.[/] Everything finished so far is kept; continue with "
                          f"[bold]meta-agent resume {ctx.run_dir}[/] (optionally with a new --budget-minutes).")
            raise SystemExit(3) from None
    print_summary(console, summary, ctx.run_dir)
    if cfg.tracker != "none":
        from meta_agent.tracking.export import viewer_hint

        console.print(viewer_hint(ctx.run_dir, cfg.tracker))
    return ctx.run_dir


def print_summary(console: Console, summary: RunSummary, run_dir: Path) -> None:
    """The same markdown as summary.md, rendered for the terminal."""
    console.print(Markdown(render_markdown(summary)))
    console.print(f"summary: {run_dir / 'summary.md'}; review the harness with `git log --notes main` "
                  f"and `meta-agent lineage {run_dir}`")
