"""The one progress bar every long command shows: what it is doing, how far, how long, how long to go."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def progress_bar(console: Console, *, note: bool = False, enabled: bool = True) -> Progress:
    """Description, bar, done/total, elapsed, eta; `note` adds a task field `note` after the count."""
    extra = [TextColumn("{task.fields[note]}")] if note else []
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), *extra,
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
                    disable=not enabled, transient=False)
