"""`meta-agent status RUN`: is a run alive, where is it, what has it spent. Reads the run; changes nothing."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from meta_agent.eventlog import EventLog, require_run
from meta_agent.evolve.active_time import run_seconds
from meta_agent.evolve.live import LiveState, is_alive, read_live
from meta_agent.journal import CandidateCreated, GenerationDone, RunDone, StageDone, Trained, VerdictRecorded
from meta_agent.llm.accounting import USAGE_FILE, LedgerState
from meta_agent.runinfo import read_run_info

console = Console(highlight=False, soft_wrap=True)


@dataclass
class Where:
    generation: int
    generations: int
    created: int
    decided: int
    promoted: int
    done: bool


def where(log: EventLog, generations: int) -> Where:
    g = len(log.of_type(GenerationDone))
    created = [c for c in log.of_type(CandidateCreated) if c.gen == g]
    ours = {c.cand_id for c in created}
    verdicts = [v for v in log.of_type(VerdictRecorded) if v.cand_id in ours]
    return Where(generation=g, generations=generations, created=len(created), decided=len(verdicts),
                 promoted=sum(v.verdict == "promoted" for v in verdicts), done=bool(log.of_type(RunDone)))


def _ago(t: float) -> str:
    s = max(0, int(time.time() - t))
    return f"{s // 3600} h {s % 3600 // 60} min" if s >= 3600 else f"{s // 60} min {s % 60} s" if s >= 60 \
        else f"{s} s"


def state_line(run_dir: Path, live: LiveState | None, done: bool) -> str:
    back = f"continue with: meta-agent resume {run_dir}"
    if done:
        return "[green]finished[/]"
    if live is None:
        return f"[yellow]not running[/] (no live.json: it ran with an older version, or never started); {back}"
    if is_alive(live):
        return f"[green]running[/] (pid {live.pid}, `{live.command}`, started {_ago(live.started)} ago)"
    if live.ended is None and live.host != socket.gethostname():
        return f"[yellow]unknown[/]: it ran on host {escape(live.host)}, whose processes this machine cannot see"
    why = escape(live.ended or f"killed or crashed; last sign of life {_ago(live.updated)} ago")
    return f"[yellow]not running[/] ({why}); {back}"


def status(run_dir: Annotated[Path, typer.Argument(help="an evolve run directory")]) -> None:
    """Whether a run is alive, where it is (generation, candidates, the phase running now) and what it has
    spent (working time, trainings, LLM tokens and dollars). Reads the run's files; changes nothing."""
    run_dir = run_dir.resolve()
    require_run(run_dir)
    info = read_run_info(run_dir)
    log = EventLog(run_dir, repair=False)
    live = read_live(run_dir)
    at = where(log, int(info.settings.get("generations", 0)))
    console.print(f"[bold]run[/] {run_dir} ({info.command}, {info.domain}, policy {Path(info.policy).name})")
    console.print(f"[bold]state[/] {state_line(run_dir, live, at.done)}")
    if not at.done:
        gen = min(at.generation + 1, at.generations)
        console.print(f"[bold]where[/] generation {gen} of {at.generations} ({at.generation} done); this "
                      f"generation: {at.created} candidates created, {at.decided} decided, {at.promoted} promoted")
        if live is not None and live.phase:
            now = escape(live.phase + (f" · {live.detail}" if live.detail else ""))
            console.print(f"[bold]{'now' if is_alive(live) else 'last'}[/] {now} (for {_ago(live.phase_since)})")
            if live.steps_total:
                eta = "" if live.eta_seconds is None or not is_alive(live) else \
                    f", about {_ago(time.time() - live.eta_seconds)} to go"
                if live.generation_eta_seconds is not None and is_alive(live):
                    eta += f" (this generation: about {_ago(time.time() - live.generation_eta_seconds)})"
                console.print(f"[bold]steps[/] {live.steps_done} of about {live.steps_total} GRPO steps{eta}")
    trainings = len(log.of_type(Trained)) + sum(e.stage in ("train", "confirm") for e in log.of_type(StageDone))
    spent = f"{_ago(time.time() - run_seconds(log))} of work, {trainings} training runs"
    usage = run_dir / USAGE_FILE
    if usage.is_file():
        try:
            total = LedgerState.model_validate_json(usage.read_bytes()).total
            spent += (f", LLM {total.calls} calls, {total.prompt_tokens + total.completion_tokens:,} tokens, "
                      f"${total.dollars:.2f}")
        except (OSError, ValidationError):
            spent += f", LLM usage unreadable ({usage.name})"
    console.print(f"[bold]spent[/] {spent}")
