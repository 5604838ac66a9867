"""Repair turns: a candidate that fails static gets its proposer back with the failure, the revision is a
new commit on the same branch, it is backtested again and, here, promoted and merged. A proposer that
declines leaves the first verdict standing. Run with a plugin proposer (tests/evolve/plugins), the harness
training by script (tests/scripted_harness)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from meta_agent.journal import CandidateCreated, Repaired, StageDone, VerdictRecorded
from tests.conftest import journal
from tests.evolve.conftest import data_env, tiny_config

pytestmark = pytest.mark.slow  # whole (small) evolve runs

PLUGINS = Path(__file__).parent / "plugins"


def _evolve(run: Path, mode: str) -> subprocess.CompletedProcess[str]:
    config = tiny_config(run, generations=1, candidates=1, noise_reruns=0, control="none", skills=[],
                         proposer="repairing_proposer:RepairingProposer")
    env = {**data_env(run.parent / "data", scripted=True), "REPAIRING_PROPOSER_MODE": mode,
           "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "meta_agent", "evolve", "--config", str(config)], env=env,
                          capture_output=True, text=True, timeout=1500)


def test_a_candidate_that_fails_static_is_repaired_backtested_again_and_merged(tmp_path: Path) -> None:
    run = tmp_path / "fix"
    res = _evolve(run, "fix")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    [created] = journal(run, CandidateCreated)
    [repaired] = journal(run, Repaired)
    assert repaired["attempt"] == 1 and repaired["failed_stage"] == "static" and repaired["commit"]
    stages = [(s["stage"], s["passed"]) for s in journal(run, StageDone)]
    assert stages[:3] == [("implement", True), ("static", False), ("static", True)]
    first_static = journal(run, StageDone)[1]
    assert "strict_answer.py" in first_static["reason"], "the failure the repair turn was shown"
    [verdict] = journal(run, VerdictRecorded)
    assert verdict["verdict"] == "promoted", verdict

    repo = git.Repo(run / "harness")
    fixed = repo.commit(repaired["commit"])
    assert [p.hexsha for p in fixed.parents] == [created["commit"]], "the failed attempt stays in the branch"
    assert repo.commit(created["branch"]) == fixed
    assert "strict_answer.py" not in [b.path for b in repo.commit("main").tree.blobs]
    assert "def single_answer" in repo.git.show("main:harness/math/rewards.py")
    note = json.loads(repo.git.notes("show", fixed.hexsha))
    assert [s["passed"] for s in note["stages"] if s["stage"] == "static"] == [False, True], \
        "the note keeps every attempt's stage result"
    check = subprocess.run([sys.executable, "-m", "meta_agent", "lineage", str(run), "--check"],
                           capture_output=True, text=True, env=data_env(tmp_path / "data"))
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_proposer_that_declines_the_repair_leaves_the_static_rejection(tmp_path: Path) -> None:
    run = tmp_path / "decline"
    # Also: an evidence folder that cannot be written (a file where its build dir goes) costs the agents
    # their evidence for that generation, not the run.
    (run / "gen-000").mkdir(parents=True)
    (run / "gen-000" / "evidence.new").write_text("in the way")
    res = _evolve(run, "give_up")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "no evidence folder this generation" in res.stdout + res.stderr
    assert not (run / "gen-000" / "evidence").exists()
    [repaired] = journal(run, Repaired)
    assert repaired["commit"] is None and repaired["reason"].startswith("cannot repair a static failure")
    [verdict] = journal(run, VerdictRecorded)
    assert (verdict["verdict"], verdict["stage"]) == ("rejected", "static")
    assert "strict_answer.py" in verdict["reason"]
    [created] = journal(run, CandidateCreated)
    repo = git.Repo(run / "harness")
    assert repo.commit(created["branch"]).hexsha == created["commit"], "the branch keeps the failed attempt"


def test_a_run_killed_inside_a_repair_turn_resumes_into_the_same_repaired_winner(tmp_path: Path) -> None:
    run = tmp_path / "killed"
    res = _evolve(run, "kill_once")
    assert res.returncode == -9, res.stdout[-3000:] + res.stderr[-3000:]
    assert (run / "killed-in-repair").is_file() and not journal(run, Repaired)
    env = {**data_env(run.parent / "data", scripted=True), "REPAIRING_PROPOSER_MODE": "kill_once",
           "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])}
    resumed = subprocess.run([sys.executable, "-m", "meta_agent", "resume", str(run)], env=env, capture_output=True,
                             text=True, timeout=1500)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    [created] = journal(run, CandidateCreated)
    [repaired] = journal(run, Repaired)
    assert repaired["attempt"] == 1 and repaired["commit"]
    [verdict] = journal(run, VerdictRecorded)
    assert verdict["verdict"] == "promoted", verdict
    repo = git.Repo(run / "harness")
    assert [p.hexsha for p in repo.commit(repaired["commit"]).parents] == [created["commit"]], \
        "one repair commit on the failed attempt: the killed turn left nothing behind"
    check = subprocess.run([sys.executable, "-m", "meta_agent", "lineage", str(run), "--check"],
                           capture_output=True, text=True, env=data_env(tmp_path / "data"))
    assert check.returncode == 0, check.stdout + check.stderr
