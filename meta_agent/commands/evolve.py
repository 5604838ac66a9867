"""`meta-agent evolve` and `meta-agent resume`: progress display and the one-screen summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from meta_agent.config import EvolveConfig
from meta_agent.errors import BudgetExhausted
from meta_agent.evolve import prepare, run


class RichReporter:
    """Progress in training steps (the dominant cost) with the current phase as the description."""

    def __init__(self, console: Console, cfg: EvolveConfig) -> None:
        steps = cfg.steps
        total = cfg.generations * steps * (1 + cfg.candidates) + cfg.noise_reruns * steps
        if cfg.control == "static":
            total += max(0, cfg.generations - 1) * steps
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console)
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
        console.print(f"[bold]run[/] {ctx.run_dir}  [bold]harness[/] {ctx.repo.working_dir}  "
                      f"[bold]sandbox[/] {ctx.sandbox.name}  [bold]proposer[/] {ctx.proposer.name}")
        try:
            summary = run(ctx)
        except BudgetExhausted as e:
            console.print(f"[yellow]stopped: {e}.[/] Everything finished so far is kept; continue with "
                          f"[bold]meta-agent resume {ctx.run_dir}[/] (optionally with a new --budget-minutes).")
            raise SystemExit(3) from None
    print_summary(console, summary, ctx.run_dir)
    return ctx.run_dir


def print_summary(console: Console, summary: dict[str, Any], run_dir: Path) -> None:
    gens = Table("gen", "main's policy on selection", "dominant failure modes", title="Generations")
    for g in summary["generations"]:
        gens.add_row(str(g["gen"]), f"{g['control_score']:.3f} [{g['control_low']:.3f}, {g['control_high']:.3f}]",
                     ", ".join(g["dominant"]))
    console.print(gens)
    cands = Table("candidate", "kind", "verdict", "stage", "reason", title="Candidates")
    for c in summary["candidates"]:
        style = "green" if c["verdict"] == "promoted" else "red"
        cands.add_row(f"{c['cand_id']}\n{c['title']}", c["kind"], f"[{style}]{c['verdict']}[/]", c["stage"],
                      c["reason"][:200])
    console.print(cands)
    final = summary.get("final") or {}
    if "evolved" in final:
        e = final["evolved"]
        line = f"test split: evolved {e['mean']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"
        if "static" in final:
            s, p = final["static"], final["paired"]
            line += (f" vs static {s['mean']:.3f} [{s['low']:.3f}, {s['high']:.3f}]; "
                     f"paired {p['mean']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]")
        console.print(f"[bold]{line}[/]")
    console.print(f"summary: {run_dir / 'summary.md'}; review the harness with `git log --notes main` "
                  f"and `meta-agent lineage {run_dir}`")
