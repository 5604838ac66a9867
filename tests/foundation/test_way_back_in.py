"""Stopping a run and finding it again: a second Ctrl-C stops at once, `status` tells a dead run from a live one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.eventlog import EventLog
from meta_agent.evolve.live import LIVE_FILE, LiveWriter
from meta_agent.journal import GenerationStarted
from meta_agent.runinfo import RunInfo, write_run_info

runner = CliRunner()

CLEANUP_THAT_HANGS = """
import sys, time
from pathlib import Path
from meta_agent.commands.evolve import interrupts
with interrupts(Path(sys.argv[1])):
    try:
        print("ready", flush=True)
        time.sleep(120)
    finally:
        print("cleaning up", flush=True)
        time.sleep(120)
"""


def _line(proc: subprocess.Popen[str], text: str) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if text in line:
            return
    raise AssertionError(f"the process ended before printing {text!r}")


def test_a_second_ctrl_c_stops_a_cleanup_that_hangs_at_once(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    proc = subprocess.Popen([sys.executable, "-c", CLEANUP_THAT_HANGS, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _line(proc, "ready")
        proc.send_signal(signal.SIGINT)
        _line(proc, "cleaning up")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130, "the second Ctrl-C waited for the cleanup"
    finally:
        proc.kill()
    said = " ".join(proc.stderr.read().split()) if proc.stderr else ""
    assert "Ctrl-C again stops at once" in said and "stopped at once" in said
    assert f"continue with: meta-agent resume {tmp_path}" in said


SLOW_IMPORT = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from meta_agent.commands.evolve import interrupts
with interrupts(Path(sys.argv[1])):
    try:
        import slow_native_init  # stands in for torch, whose initialisation aborts if interrupted inside
        print("imported whole:", slow_native_init.DONE, flush=True)
        time.sleep(120)
    except KeyboardInterrupt:
        print("stopped after the import", flush=True)
        sys.exit(130)
"""


def test_ctrl_c_during_an_import_stops_the_run_once_the_import_is_done(tmp_path: Path) -> None:
    """Raised inside torch's lazy import, KeyboardInterrupt aborted `evolve` (SIGABRT, a C++ "terminate" and
    no clean stop); the first Ctrl-C now waits for the import and then stops the run as usual."""
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "slow_native_init.py").write_text(
        "import time\nprint('importing', flush=True)\ntime.sleep(1.5)\nDONE = True\n")
    proc = subprocess.Popen([sys.executable, "-c", SLOW_IMPORT, str(tmp_path), str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _line(proc, "importing")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()
    out = proc.stdout.read() if proc.stdout else ""
    assert "imported whole: True" in out and "stopped after the import" in out, out
    said = " ".join(proc.stderr.read().split()) if proc.stderr else ""
    assert said.count("interrupted: stopping") == 1, said


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write_run_info(run, RunInfo(command="evolve", domain="math", harness=str(tmp_path / "h"), policy="tiny",
                                created="2026-01-01T00:00:00", settings={"generations": 3}))
    EventLog(run).append(GenerationStarted(main="0" * 40, t=time.time()), key="g0/start")
    return run


def _status(run: Path) -> str:
    res = runner.invoke(app, ["status", str(run)], terminal_width=200)
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_status_of_a_run_whose_process_was_killed(tmp_path: Path) -> None:
    run = _run(tmp_path)
    gone = subprocess.Popen([sys.executable, "-m", "meta_agent", "--version"], stdout=subprocess.DEVNULL)
    gone.wait()
    LiveWriter(run, "evolve", 12).update(phase="gen 0: training the policy under main (4 steps)", detail="step 2/4")
    state = json.loads((run / LIVE_FILE).read_text())
    state["pid"] = gone.pid
    (run / LIVE_FILE).write_text(json.dumps(state))
    said = _status(run)
    assert "not running (killed or crashed; last sign of life" in said, said
    assert f"meta-agent resume {run}" in said
    assert "generation 1 of 3" in said and "gen 0: training the policy under main (4 steps) · step 2/4" in said


def test_status_of_a_running_run_names_its_process(tmp_path: Path) -> None:
    run = _run(tmp_path)
    LiveWriter(run, "resume", 12).update(phase="gen 0: diagnosing (skills proposer)")  # this test's own process
    said = _status(run)
    assert "running (pid" in said and "`resume`" in said and "now gen 0: diagnosing" in said, said


def test_status_of_a_directory_without_a_run_says_so(tmp_path: Path) -> None:
    res = runner.invoke(app, ["status", str(tmp_path)])
    assert res.exit_code == 1 and "holds no evolve run" in " ".join(res.output.split())


def test_training_progress_is_read_from_the_partial_metrics_and_cannot_run_past_the_steps(tmp_path: Path) -> None:
    """Progress is display only: a harness that writes garbage or a thousand lines moves the bar to its
    steps and no further, and what it writes too fast to be seen is reported from the validated metrics."""
    from meta_agent.harness_runner import StepSeen, _StepWatcher

    partial = tmp_path / "metrics.jsonl.partial"
    seen: list[StepSeen] = []
    watcher = _StepWatcher(partial, 4, seen.append)
    with watcher.watching():
        partial.write_text(json.dumps({"step": 1, "reward_mean": 0.25}) + "\n")
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.1)
        partial.write_text("".join(f"{{not json {i}\n" for i in range(1000)))
        time.sleep(1.5)
    assert seen[0].done == 1 and seen[0].reward == 0.25 and seen[0].steps == 4
    assert seen[-1].done == 4 and seen[-1].reward is None, seen
    assert sum(s.new for s in seen) == 4
    watcher.report(4, 0.5)  # the validated metrics at the end: nothing new
    assert sum(s.new for s in seen) == 4


HOSTILE_TITLE = "gen 0: candidate 1 (Fix [/] the [bold]reward[/bold] [link=x]): implementing"


def test_a_proposers_title_is_shown_as_text_never_as_markup(tmp_path: Path) -> None:
    """A title with a stray `[/]` used to raise Rich's MarkupError inside the progress display and stop the run."""
    import io

    from rich.console import Console

    from meta_agent.commands.evolve import RichReporter
    from meta_agent.config import EvolveConfig

    out = io.StringIO()
    run = _run(tmp_path)
    cfg = EvolveConfig.model_validate({"domain": "math", "run_dir": str(run)})
    RichReporter(Console(file=out, width=300), cfg).phase(HOSTILE_TITLE)
    assert HOSTILE_TITLE in out.getvalue()
    assert HOSTILE_TITLE in _status(run)
