"""Locks, budgets and refusals: what a user sees when a run cannot or must not go on."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from meta_agent.eventlog import EventLog
from meta_agent.evolve.run import repo_lock
from meta_agent.gitops import init_harness
from tests.evolve.conftest import meta_agent, tiny_config

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
    assert "is in use by a meta-agent run" in said and "first-run" in said


def test_an_exhausted_budget_stops_cleanly_and_leaves_a_resumable_run(tmp_path: Path) -> None:
    run = tmp_path / "budget"
    res = meta_agent("evolve", "--config", str(tiny_config(run)), "--budget-minutes", "0.2", data_dir=tmp_path / "data")
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
