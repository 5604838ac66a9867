"""A proposer's failure is its generation's, never the run's: a crash inside `propose` is resumed past, an
exception is journaled as the generation's reason, an unserializable hypothesis is dropped, and the run
finishes. Run with a plugin proposer (tests/evolve/plugins/hostile_proposer.py), the harness training by script
(tests/scripted_harness)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from meta_agent.journal import CandidateCreated, Proposed
from tests.conftest import journal
from tests.evolve.conftest import data_env, tiny_config

pytestmark = pytest.mark.slow  # a small evolve run, killed once and resumed

PLUGINS = Path(__file__).parent / "plugins"


def _meta_agent(run: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**data_env(run.parent / "data", scripted=True),
           "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "meta_agent", *args], env=env, capture_output=True, text=True,
                          timeout=1500)


def test_a_proposer_that_crashes_raises_and_returns_garbage_does_not_stop_the_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    config = tiny_config(run, generations=2, candidates=2, noise_reruns=0, control="none", skills=[],
                         proposer="hostile_proposer:HostileProposer")
    first = _meta_agent(run, "evolve", "--config", str(config))
    assert first.returncode == -signal.SIGKILL, first.stdout[-2000:] + first.stderr[-2000:]
    assert (run / "killed-in-propose").is_file(), "the kill came inside propose"

    resumed = _meta_agent(run, "resume", str(run))
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "the hostile proposer failed: RecursionError" in resumed.stdout + resumed.stderr

    proposals = journal(run, Proposed)
    assert len(proposals) == 2, "both generations journaled a proposal: resume went past the failure"
    assert proposals[0]["hypotheses"] == [] and "RecursionError" in proposals[0]["failure"]
    assert [h["title"] for h in proposals[1]["hypotheses"]] == ["Note the learning rate in harness.yaml"]
    assert "dropped hypothesis 0" in proposals[1]["failure"] and "params" in proposals[1]["failure"]
    [created] = journal(run, CandidateCreated)
    assert created["gen"] == 1 and created["ok"], created
    assert (run / "summary.md").is_file()
