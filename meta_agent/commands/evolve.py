"""`meta-agent evolve` and `meta-agent resume`: progress, the way back in, and the one-screen summary.

On a terminal, progress is one live bar (training steps, the dominant cost) whose description is the
current phase. Elsewhere (a log file, CI, `nohup`) each phase, training step and evaluation batch is
one plain line. Either way RUN/live.json says what the process is doing (`meta-agent status RUN`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape

from meta_agent.commands.estimate import estimate
from meta_agent.config import EvolveConfig
from meta_agent.errors import BudgetExhausted
from meta_agent.eventlog import EventLog
from meta_agent.evolve import prepare, run
from meta_agent.evolve.active_time import run_seconds
from meta_agent.evolve.estimate import (
    cached_rates,
    estimate_seconds,
    eval_batch_of,
    plan_of,
    rates_key,
    record_outcome,
)
from meta_agent.evolve.eta import Etas
from meta_agent.evolve.live import LiveWriter
from meta_agent.harness_runner import StepSeen
from meta_agent.journal import NoiseMeasured, StageDone, Trained
from meta_agent.llm.accounting import USAGE_FILE
from meta_agent.llm.usage_watch import watching_usage
from meta_agent.progress import progress_bar, step_text
from meta_agent.report.lineage_page import write_run_page
from meta_agent.report.summary import RunSummary, render_markdown
from meta_agent.runinfo import RUN_FILE, default_run_dir


def planned_steps(cfg: EvolveConfig) -> int:
    """GRPO steps a whole run trains at most: the plan `--dry-run` prints."""
    return plan_of(cfg, eval_batch_of(cfg)).grpo_steps


def steps_done(log: EventLog, cfg: EvolveConfig) -> int:
    """GRPO steps the run's journal shows trained (main, static arm and noise runs, train and confirm rungs)."""
    runs = len(log.of_type(Trained)) + sum(e.stage == "train" for e in log.of_type(StageDone))
    noise = sum(len(e.deltas) for e in log.of_type(NoiseMeasured))
    confirms = sum(e.stage == "confirm" for e in log.of_type(StageDone))
    return (runs + noise) * cfg.steps + confirms * cfg.confirm_steps


class RichReporter:
    """Progress in training steps with the current phase as the description (see the module docstring)."""

    def __init__(self, console: Console, cfg: EvolveConfig, command: str = "evolve") -> None:
        assert cfg.run_dir is not None
        self.live = console.is_terminal
        self.progress = progress_bar(console, note=True, enabled=self.live)
        self.task = self.progress.add_task("starting", total=planned_steps(cfg), note="")
        self.console = console
        self.answered = 0
        one_generation = cfg.model_copy(update={"generations": 1})
        self.etas = Etas(total=planned_steps(cfg), per_generation=planned_steps(one_generation))
        self.state = LiveWriter(cfg.run_dir, command, planned_steps(cfg))
        self.run_dir = cfg.run_dir
        self.page_written = 0.0

    def refresh_page(self, every_s: float = 5.0) -> None:
        """Rewrite RUN/lineage.html with the phase running now (at most every `every_s`; a page that cannot
        be written yet, before the run's journal exists, is simply skipped)."""
        if time.monotonic() - self.page_written >= every_s:
            self.page_written = time.monotonic()
            write_run_page(self.run_dir, lambda _problem: None)

    def resumed_at(self, done: int) -> None:
        """Count what earlier processes of this run trained (so a resumed run's eta and status are right)."""
        self.progress.update(self.task, completed=done)
        self.etas.resumed_at(done)
        self.state.update(steps_done=done)

    def phase(self, text: str) -> None:
        """`text` may carry a proposer's words (a candidate's title): shown as text, never as Rich markup,
        where a stray `[/]` would raise and stop the run."""
        self.answered = 0
        self.etas.phase(text)
        self.progress.update(self.task, description=escape(text), note="")
        if self.live:
            self.progress.log(escape(text))
        else:
            self.console.print(f"\\[{time.strftime('%H:%M:%S')}] {escape(text)}", highlight=False, soft_wrap=True)
        self.state.update(phase=text)
        self.refresh_page()

    def training_step(self, seen: StepSeen | None = None) -> None:
        steps = seen.new if seen else 1
        self.progress.advance(self.task, steps)
        self.etas.advance(steps)
        if seen is None:
            return
        text = step_text(seen)
        self.progress.update(self.task, note=text + self.etas.text())
        if not self.live:
            self.console.print(f"  {text}{self.etas.text()}", highlight=False, soft_wrap=True)
        self.state.update(detail=text, steps_done=self.etas.done, eta_seconds=self.etas.run_left(),
                          generation_eta_seconds=self.etas.generation_left())

    def llm_usage(self, text: str) -> None:
        """The run's LLM sessions booked more calls (llm/usage_watch.py, from a watcher thread)."""
        self.progress.update(self.task, note=text)
        if not self.live:
            self.console.print(f"  {text}", highlight=False, soft_wrap=True)
        self.state.update(detail=text)

    def tasks_answered(self, n: int) -> None:
        self.answered += n
        text = f"{self.answered} tasks answered"
        self.progress.update(self.task, note=text)
        if not self.live:
            self.console.print(f"  {text}", highlight=False, soft_wrap=True)
        self.state.update(detail=text)


def way_back_in(run_dir: Path) -> str:
    """What a user types to continue this run (or why there is nothing to continue)."""
    if (run_dir / RUN_FILE).is_file():
        return f"Everything finished so far is kept; continue with: meta-agent resume {run_dir}"
    return "The run had not started; nothing was kept. Run the same command again."


@dataclass
class Interrupts:
    presses: int = 0
    deferred: bool = False
    """The first Ctrl-C came during an import: it is raised once the import is done."""

    def reason(self) -> str | None:
        """A budget check: stops the run at its next step should the KeyboardInterrupt itself have been lost
        (raised inside code that had to catch everything, such as one candidate's isolation)."""
        return "interrupted by Ctrl-C" if self.presses else None


@contextmanager
def interrupts(run_dir: Path) -> Iterator[Interrupts]:
    """Ctrl-C: the first stops the run after its sandboxes and workers are cleaned up, and says how to
    continue; a second one while that happens stops the process at once (what is journaled is kept either
    way, as after a kill). Only the main thread can take signals: elsewhere, nothing changes. The handler
    writes with os.write: a print from a signal handler can land inside another print and raise.

    A first Ctrl-C during an import waits for the import to end: raised inside one, KeyboardInterrupt can
    unwind into a native module's initialisation (torch's, imported lazily at the run's first evaluation),
    which aborts the whole process (SIGABRT, "terminate called after throwing ...") instead of stopping it
    cleanly. The handler then asks again every 0.1 s until no import is on the stack."""
    state = Interrupts()

    def say(text: str) -> None:
        with contextlib.suppress(OSError):
            os.write(2, f"\n{text} {way_back_in(run_dir)}\n".encode())

    def handler(_signum: int, frame: FrameType | None) -> None:
        if state.deferred:  # the first press, asked again (or a second one while it waits: the same)
            if _importing(frame):
                _ask_again()
                return
            state.deferred = False
            raise KeyboardInterrupt
        state.presses += 1
        if state.presses == 1:
            say("interrupted: stopping (Ctrl-C again stops at once).")
            if _importing(frame):
                state.deferred = True
                _ask_again()
                return
            raise KeyboardInterrupt
        say("stopped at once.")
        os._exit(130)

    try:
        old = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        yield state
        return
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, old)


def _importing(frame: FrameType | None) -> bool:
    """Whether an import is running in the main thread's stack (Python's import machinery is on it)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _ask_again() -> None:
    """SIGINT to this process again in 0.1 s (the handler decides then whether it may raise)."""
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    timer.daemon = True
    timer.start()


def learn_from_run(cfg: EvolveConfig, policy: Path, real_s: float) -> None:
    """Tell later estimates how far this finished run's working time was from the plan's estimate."""
    key = rates_key(cfg, policy)
    rates = cached_rates(key)
    if rates is not None:
        record_outcome(key, estimate_seconds(plan_of(cfg, eval_batch_of(cfg)), rates), real_s)


def run_evolve(cfg: EvolveConfig, console: Console, resume: bool = False) -> Path:
    run_dir = (cfg.run_dir or default_run_dir("evolve", cfg.domain)).resolve()
    cfg = cfg.model_copy(update={"run_dir": run_dir})
    reporter = RichReporter(console, cfg, "resume" if resume else "evolve")
    try:
        usage = run_dir / USAGE_FILE
        with interrupts(run_dir) as pressed, reporter.progress, watching_usage(usage, reporter.llm_usage):
            ctx = prepare(cfg, reporter, resume=resume)
            ctx.budget.extra_checks.append(pressed.reason)
            reporter.resumed_at(steps_done(ctx.log, cfg))
            for repair in ctx.repairs:
                console.print(f"[yellow]repaired:[/] {repair}")
            console.print(f"[bold]run[/] {ctx.run_dir}  [bold]harness[/] {ctx.repo.working_dir}  "
                          f"[bold]sandbox[/] {ctx.sandbox.name}  [bold]proposer[/] {ctx.proposer.name}")
            if not resume:
                estimate(cfg, ctx.root_policy, console, measure=False)
            summary = run(ctx)
    except KeyboardInterrupt:
        reporter.state.update(ended="interrupted (Ctrl-C)")
        reporter.refresh_page(every_s=0)
        console.print(f"[yellow]interrupted.[/] {way_back_in(run_dir)}", highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except BudgetExhausted as e:
        if "interrupted by Ctrl-C" in str(e):
            reporter.state.update(ended="interrupted (Ctrl-C)")
            console.print(f"[yellow]interrupted.[/] {way_back_in(run_dir)}", highlight=False, soft_wrap=True)
            raise typer.Exit(130) from None
        reporter.state.update(ended=f"stopped: {e}")
        reporter.refresh_page(every_s=0)
        console.print(f"[yellow]stopped: {e}.[/] Everything finished so far is kept; continue with "
                      f"[bold]meta-agent resume {run_dir}[/] (optionally with a new --budget-minutes).", soft_wrap=True)
        raise SystemExit(3) from None
    except BaseException as e:
        reporter.state.update(ended=f"failed: {type(e).__name__}")
        raise
    reporter.state.update(ended=f"finished {time.strftime('%Y-%m-%d %H:%M:%S')}")
    learn_from_run(cfg, ctx.root_policy, run_seconds(ctx.log))
    print_summary(console, summary, run_dir)
    if cfg.tracker != "none":
        from meta_agent.tracking.export import viewer_hint

        console.print(viewer_hint(run_dir, cfg.tracker))
    return run_dir


def print_summary(console: Console, summary: RunSummary, run_dir: Path) -> None:
    """The same markdown as summary.md, rendered for the terminal."""
    console.print(Markdown(render_markdown(summary)))
    console.print(f"summary: {run_dir / 'summary.md'}; review the harness with `git log --notes main` "
                  f"and `meta-agent lineage {run_dir}`")
