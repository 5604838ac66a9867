"""Crash-safe at every point: a kill between any side effect and its journal line, then `resume`, ends in
exactly the state of an uninterrupted run (main, branches, notes, checkout, journal, index, skill evidence,
summary). One reference run passes every declared crash point and leaves, at each, a copy of what a kill
there would leave; each copy is resumed and compared. A second test kills for real, twice in a row. The harness
trains by script (tests/scripted_harness), so the ~40 resumes take minutes, not most of an hour."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from meta_agent.crashpoints import CRASH_ENV, POINTS, SNAPSHOT_ENV, TRACE_ENV
from meta_agent.eventlog import EventLog
from meta_agent.journal import Resumed
from tests.conftest import TEST_ROOT
from tests.evolve.conftest import HERE, tiny_config
from tests.scripted_harness.template import scripted_env

pytestmark = pytest.mark.slow  # one small run, then one resume per crash point

SKILLS = HERE / "conflict_skills"  # two winners: a merge, then a combination that cannot be made


def _evolve(args: list[str], data: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "META_AGENT_DATA": str(data), **scripted_env(TEST_ROOT), **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "meta_agent", *args], capture_output=True, text=True, env=env,
                          timeout=1200)


def _commit(repo: git.Repo, sha: str) -> tuple[str, str, int]:
    """A commit as a user compares it: content, message, merge or not. (Its date is the real time it was
    made; one first made after a resume is rightly dated then, so the hash may differ.)"""
    c = repo.commit(sha)
    return c.tree.hexsha, str(c.message), len(c.parents)


def state(run: Path, data: Path) -> dict[str, Any]:
    """Everything a user could look at after the run, minus what no two runs share (timings)."""
    repo = git.Repo(run / "harness")
    notes: dict[tuple[str, str, int], str] = {}
    for line in repo.git.notes("--ref", "refs/notes/commits", "list").splitlines():
        _blob, commit = line.split()
        note = json.loads(repo.git.notes("--ref", "refs/notes/commits", "show", commit))
        notes[_commit(repo, commit)] = note["verdict"]["verdict"]
    db = sqlite3.connect(run / "lineage.sqlite")
    index = sorted((cand, verdict, stage, bool(merge)) for cand, verdict, stage, merge in
                   db.execute("SELECT cand_id, verdict, stage, merge_commit FROM candidates").fetchall())
    status = db.execute("SELECT status FROM runs").fetchall()
    db.close()
    evidence = {}
    for overlay in sorted((data / "skills").rglob("*.yaml")):
        entries = (yaml.safe_load(overlay.read_text()) or {}).get("evidence", [])
        evidence[overlay.name] = sorted((e["run"], e["verdict"], e["stage"]) for e in entries)
    summary = json.loads((run / "summary.json").read_text())
    return {
        "main": [_commit(repo, c.hexsha) for c in repo.iter_commits("main")],
        "branches": sorted((h.name, *_commit(repo, h.commit.hexsha)) for h in repo.heads),
        "notes": notes,
        "checkout clean": repo.git.status("--porcelain") == "",
        # every step once, in order (a resume's own marker, which dates the downtime, aside)
        "journal": [r.key for r in EventLog(run, repair=False).records if not isinstance(r.event, Resumed)],
        "index": index, "status": status, "evidence": evidence,
        "summary": [(c["cand_id"], c["verdict"], c["stage"]) for c in summary["candidates"]],
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, list[str]]:
    """(run dir, data dir, snapshots dir, points passed) of one uninterrupted run."""
    base = tmp_path_factory.mktemp("crash")
    run, data, snapshots, trace = base / "run", base / "data", base / "snapshots", base / "trace.txt"
    config = tiny_config(run, generations=1, candidates=2, noise_reruns=0, control="none", skills=[str(SKILLS)])
    done = _evolve(["evolve", "--config", str(config)], data,
                   {TRACE_ENV: str(trace), SNAPSHOT_ENV: str(snapshots)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return run, data, snapshots, trace.read_text().split()


def _restore(snapshot: Path, run: Path, data: Path) -> None:
    for target, source in ((run, snapshot / "run"), (data, snapshot / "data")):
        shutil.rmtree(target, ignore_errors=True)
        if source.exists():
            shutil.copytree(source, target, symlinks=True)


@contextmanager
def reference_kept(run: Path, data: Path, keep: Path) -> Iterator[None]:
    """Let a test overwrite the reference run's directories, and put them back afterwards."""
    shutil.copytree(run, keep / "run", symlinks=True)
    shutil.copytree(data, keep / "data", symlinks=True)
    try:
        yield
    finally:
        _restore(keep, run, data)


def test_every_declared_crash_point_is_reached(reference: tuple[Path, Path, Path, list[str]]) -> None:
    _run, _data, _snapshots, passed = reference
    assert set(POINTS) - set(passed) == set(), "declared crash points that the run never passes (untested)"


def test_a_kill_at_any_crash_point_resumes_to_the_uninterrupted_state(
    reference: tuple[Path, Path, Path, list[str]], tmp_path: Path
) -> None:
    run, data, snapshots, _passed = reference
    expected = state(run, data)
    with reference_kept(run, data, tmp_path / "reference"):
        for point in sorted(POINTS):
            _restore(snapshots / point.replace("/", "__"), run, data)
            done = _evolve(["resume", str(run)], data)
            assert done.returncode == 0, f"{point}: " + done.stdout[-2000:] + done.stderr[-2000:]
            got = state(run, data)
            for part, value in expected.items():
                assert got[part] == value, f"killed at {point}: {part} differs from the uninterrupted run"


def test_a_kill_during_the_resume_of_a_kill_still_ends_in_the_same_state(
    reference: tuple[Path, Path, Path, list[str]], tmp_path: Path
) -> None:
    run, data, snapshots, _passed = reference
    expected = state(run, data)
    with reference_kept(run, data, tmp_path / "reference"):
        _restore(snapshots / "candidate__after-branch", run, data)
        killed = _evolve(["resume", str(run)], data, {CRASH_ENV: "merge/after-update-ref"})
        assert killed.returncode == -9, "the resume was killed (SIGKILL) at the merge"
        done = _evolve(["resume", str(run)], data)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert state(run, data) == expected
        resumes = [r for r in EventLog(run).records if isinstance(r.event, Resumed)]
        assert len(resumes) == 2, "each resume dates itself, so the downtime before it is not counted as work"


def test_a_kill_while_the_harness_repo_is_built_leaves_a_run_that_the_same_evolve_can_start_again(
    reference: tuple[Path, Path, Path, list[str]], tmp_path: Path
) -> None:
    run, data, snapshots, _passed = reference
    expected = state(run, data)
    with reference_kept(run, data, tmp_path / "reference"):
        _restore(snapshots / "setup__harness-half-made", run, data)
        assert not (run / "harness").exists(), "no half-made repo stands where the harness belongs"
        again = _evolve(["evolve", "--config", str(run.parent / f"{run.name}.yaml")], data)
        assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
        assert state(run, data) == expected
