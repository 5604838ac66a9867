"""The one progress bar every long command shows: what it is doing, how far, how long, how long to go."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

if TYPE_CHECKING:
    from meta_agent.harness_runner import StepSeen


def progress_bar(console: Console, *, note: bool = False, enabled: bool = True) -> Progress:
    """Description, bar, done/total, elapsed, eta; `note` adds a task field `note` after the count."""
    extra = [TextColumn("{task.fields[note]}")] if note else []
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), *extra,
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
                    disable=not enabled, transient=False)


def step_text(seen: StepSeen) -> str:
    """`step 3/8 · reward 0.250 · 9.8 s/step` for one training run's progress."""
    reward = "" if seen.reward is None else f" · reward {seen.reward:.3f}"
    return f"step {seen.done}/{seen.steps}{reward} · {seen.seconds / max(1, seen.done):.1f} s/step"
