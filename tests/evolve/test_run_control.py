"""Locks, budgets and refusals: what a user sees when a run cannot or must not go on."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from meta_agent.eventlog import EventLog
from meta_agent.evolve.run import repo_lock
from meta_agent.gitops import init_harness
from tests.evolve.conftest import data_env, meta_agent, tiny_config

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_second_run_on_the_same_harness_refuses(tmp_path: Path) -> None:
    repo = init_harness(tmp_path / "h", "math")
    with repo_lock(repo, tmp_path / "first-run"):
        res = meta_agent("evolve", "--config", str(tiny_config(tmp_path / "second")),
                         "--harness", str(tmp_path / "h"), data_dir=tmp_path / "data")
    assert res.returncode == 1
    said = _flat(res.stdout + res.stderr)
    assert "is in use by a meta-agent run" in said and "first-run" in "".join(said.split()), said  # a long path wraps


def test_an_exhausted_budget_stops_cleanly_and_leaves_a_resumable_run(tmp_path: Path) -> None:
    run = tmp_path / "budget"
    res = meta_agent("evolve", "--config", str(tiny_config(run)), "--budget-minutes", "0.2", data_dir=tmp_path / "data",
                     scripted=True)
    assert res.returncode == 3, res.stdout[-2000:] + res.stderr[-2000:]
    out = _flat(res.stdout)
    assert "wall-clock budget" in out and f"meta-agent resume {run}" in out
    log = EventLog(run)
    assert log.finished("run/start") and not log.finished("run/done")
    assert not git.Repo(run / "harness").is_dirty()


def test_a_dirty_harness_is_refused(tmp_path: Path) -> None:
    repo = init_harness(tmp_path / "h", "math")
    (Path(repo.working_dir) / "harness.yaml").write_text("domain: math\n")
    res = meta_agent("evolve", "--config", str(tiny_config(tmp_path / "run")), "--harness", str(tmp_path / "h"),
                     data_dir=tmp_path / "data")
    assert res.returncode == 1 and "uncommitted changes" in _flat(res.stdout + res.stderr)


def test_resume_of_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    res = meta_agent("resume", str(tmp_path), data_dir=tmp_path / "data")
    assert res.returncode == 1 and "not an evolve run directory" in _flat(res.stdout + res.stderr)


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 600) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        said = path.read_text(errors="replace") if path.exists() else ""
        if text in said:
            return said
        assert proc.poll() is None, f"ended ({proc.returncode}) before printing {text!r}: {said[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"no {text!r} in {timeout} s: {path.read_text()[-3000:]}")


def test_ctrl_c_says_how_to_continue_and_resume_finishes_the_run(tmp_path: Path) -> None:
    """Not on a terminal (a log file, as under nohup or CI), every training step and evaluation batch is a
    line; Ctrl-C ends with the exact resume command; `status` tells a stopped run from a running one."""
    run, log = tmp_path / "run", tmp_path / "evolve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "meta_agent", "evolve", "--config",
                                 str(tiny_config(run, generations=1, candidates=1, noise_reruns=0, control="none",
                                                 test_limit=2))],
                                stdout=out, stderr=subprocess.STDOUT,
                                env=data_env(tmp_path / "data", scripted=True))
        try:
            said = _wait_for(log, "step 1/1 · reward", proc)
            assert "gen 0: training the policy under main" in said
            alive = meta_agent("status", str(run), data_dir=tmp_path / "data")
            assert f"running (pid {proc.pid}" in _flat(alive.stdout), alive.stdout + alive.stderr
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=300) == 130
        finally:
            proc.kill()
    said = _flat(log.read_text())
    assert f"continue with: meta-agent resume {run}" in said, said[-3000:]
    stopped = meta_agent("status", str(run), data_dir=tmp_path / "data")
    assert stopped.returncode == 0, stopped.stderr
    assert "not running (interrupted (Ctrl-C))" in _flat(stopped.stdout), stopped.stdout
    assert "generation 1 of 1" in _flat(stopped.stdout)

    resumed = meta_agent("resume", str(run), data_dir=tmp_path / "data", scripted=True)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "tasks answered" in resumed.stdout, resumed.stdout[-3000:]
    assert EventLog(run).finished("run/done")
    assert "finished" in _flat(meta_agent("status", str(run), data_dir=tmp_path / "data").stdout)
