"""`meta-agent resume` after SIGKILL at several points finishes with the same lineage as an
uninterrupted run of the same seeds (candidate ids, verdicts, main's history). Both runs' harness trains by
script (tests/scripted_harness): a kill inside a real GRPO run is covered by tests/evolve/test_evolve_e2e.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import git
import pytest

from meta_agent.eventlog import EventLog
from meta_agent.journal import VerdictRecorded
from tests.conftest import journal
from tests.evolve.conftest import data_env, meta_agent, tiny_config

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def _lineage(run: Path) -> dict[str, object]:
    verdicts = [(v["cand_id"].split("/")[-1], v["skills"], v["verdict"], v["stage"])
                for v in journal(run, VerdictRecorded)]
    repo = git.Repo(run / "harness")
    main = [(c.tree.hexsha, c.message.replace(run.name, "RUN")) for c in repo.iter_commits("main", first_parent=True)]
    branches = sorted(h.name.replace(run.name, "RUN") for h in repo.heads if h.name.startswith("cand/"))
    return {"verdicts": verdicts, "main": main, "branches": branches}


def _run_until(args: list[str], condition: Callable[[], bool], data_dir: Path, timeout: float = 600) -> None:
    """Start meta-agent, SIGKILL its whole process group as soon as `condition` holds."""
    proc = subprocess.Popen([sys.executable, "-m", "meta_agent", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, env=data_env(data_dir, scripted=True))
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if condition():
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"the run ended ({proc.returncode}) before the kill point"


def _logged(run: Path, key: str) -> Callable[[], bool]:
    def check() -> bool:
        f = run / "events.jsonl"
        return f.exists() and f'"key": "{key}"' in f.read_text()

    return check


def test_sigkill_during_train_backtest_and_merge_then_resume(scripted_reference_run: Path, tmp_path: Path) -> None:
    run, data = tmp_path / "killed", tmp_path / "data"
    config = tiny_config(run)
    # 1. during the generation's training run (the harness is writing its metrics)
    _run_until(["evolve", "--config", str(config)],
               lambda: (run / "gen-000" / "main" / "metrics.jsonl.partial").exists(), data)
    # 2. during a candidate's backtest (its static stage is done, replay/train are running)
    _run_until(["resume", str(run)], _logged(run, "g0/c1/static"), data)
    # 3. right when the merges of generation 0 begin
    _run_until(["resume", str(run)], _logged(run, "g0/c1/verdict"), data)
    res = meta_agent("resume", str(run), data_dir=data, scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    assert _lineage(run) == _lineage(scripted_reference_run)
    keys = [r.key for r in EventLog(run).records if r.key]
    assert len(keys) == len(set(keys)), "a step was journaled twice"
    assert (run / "summary.md").is_file()
