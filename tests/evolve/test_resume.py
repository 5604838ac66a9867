"""`meta-agent resume` after SIGKILL at several points finishes with the same lineage as an
uninterrupted run of the same seeds (candidate ids, verdicts, main's history). Both runs' harness trains by
script (tests/scripted_harness): a kill inside a real GRPO run is covered by tests/evolve/test_evolve_e2e.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import git
import pytest
import yaml

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


def _proposed(run: Path, gen: int) -> list[tuple[tuple[str, ...], str]]:
    """Generation `gen`'s hypotheses as (skills, params)."""
    from meta_agent.journal import Proposed

    records = [r for r in EventLog(run, repair=False).records if r.key == f"g{gen}/propose"]
    assert len(records) == 1
    event = records[0].event
    assert isinstance(event, Proposed)
    return [(tuple(h.skills_used), json.dumps(h.params, sort_keys=True)) for h in event.hypotheses]


def test_a_run_after_a_run_does_not_repeat_what_the_library_measured_and_rejected(
        scripted_reference_run: Path, tmp_path: Path) -> None:
    """The second `make demo` re-trained the first one's rejected recipe for 14 minutes and rejected it again:
    under the same conditions (main, policy, settings, tasks, skill code) a variant the library holds a measured
    rejection of counts as tried, and the run goes on to what is not yet measured."""
    rejected = {(tuple(v["skills"]), json.dumps(v["params"], sort_keys=True))
                for v in journal(scripted_reference_run, VerdictRecorded)
                if v["cand_id"].split("/")[-1].startswith("0-") and v["verdict"] == "rejected" and v["stage"] == "gate"}
    assert rejected, "the reference run's generation 0 rejects a candidate at the gate"
    data = tmp_path / "data"
    shutil.copytree(scripted_reference_run.parent / "data", data)  # the first run's user library, its evidence
    run = tmp_path / "second"
    res = meta_agent("evolve", "--config", str(tiny_config(run, generations=1)), data_dir=data, scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "measured and rejected under these exact conditions" in res.stdout + res.stderr
    first, second = set(_proposed(scripted_reference_run, 0)), set(_proposed(run, 0))
    assert rejected <= first and not rejected & second, (first, second)
    assert second, "it proposed something else instead"

    again, data = tmp_path / "rerun", tmp_path / "data-again"
    shutil.copytree(scripted_reference_run.parent / "data", data)
    res = meta_agent("evolve", "--config", str(tiny_config(again)), "--rerun-known", data_dir=data, scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert set(_proposed(again, 0)) == first, "--rerun-known proposes what the first run did"
    # The same run again records the same conditions, generation 1's too (its main, policy and carried-over
    # rollouts come from generation 0: nothing of the run's name, time or commits may leak into them).
    recorded: dict[str, set[str]] = {"reference": set(), "rerun": set()}
    for overlay in (data / "skills" / ".overlay").glob("*.yaml"):
        for e in yaml.safe_load(overlay.read_text()).get("evidence", []):
            recorded.setdefault(e["run"], set()).add(e["conditions"])
    assert len(recorded["reference"]) == 2 and recorded["rerun"] == recorded["reference"], recorded
