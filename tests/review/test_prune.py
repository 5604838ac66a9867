"""`meta-agent prune RUN`: a finished run's candidate branches go, archived first; the notes stay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
from typer.testing import CliRunner

from meta_agent.cli import app
from tests.review.small_run import Plan, build

runner = CliRunner()
PLANS = [Plan(0, 0, True), Plan(0, 1, False, "replay"), Plan(1, 0, False), Plan(1, 1, True)]


def _branches(repo: git.Repo) -> list[str]:
    return [b.strip(" *") for b in repo.git.branch("--list", "cand/*").splitlines()]


def test_prune_refuses_a_run_that_is_not_finished(tmp_path: Path) -> None:
    run_dir, repo = build(tmp_path, PLANS[:2], finished=False)
    res = runner.invoke(app, ["prune", str(run_dir)])
    assert res.exit_code == 1
    assert "is not finished" in " ".join(res.output.split()) and "meta-agent resume" in res.output
    assert len(_branches(repo)) == 2


def test_prune_removes_the_branches_and_history_still_shows_every_verdict(tmp_path: Path) -> None:
    run_dir, repo = build(tmp_path, PLANS)
    before = json.loads(runner.invoke(app, ["history", str(repo.working_dir), "--json"]).output)
    res = runner.invoke(app, ["prune", str(run_dir)], terminal_width=300)
    assert res.exit_code == 0, res.output
    assert "pruned 4 candidate branches" in res.output and str(run_dir / "candidates.bundle") in res.output
    assert _branches(repo) == []
    after = json.loads(runner.invoke(app, ["history", str(repo.working_dir), "--json"]).output)
    def verdicts(data: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
        return [(c["short"], c["verdict"], c["merged"], c["reason"])
                for run in data["runs"] for g in run["generations"] for c in g["candidates"]]

    assert len(verdicts(before)) == 4 and verdicts(after) == verdicts(before)
    res = runner.invoke(app, ["lineage", str(run_dir), "--check"])
    assert res.exit_code == 0, res.output  # the archived branches count as there


def test_the_archive_restores_the_branches_and_keeps_each_note(tmp_path: Path) -> None:
    run_dir, repo = build(tmp_path, PLANS)
    heads = {b: repo.commit(b).hexsha for b in _branches(repo)}
    assert runner.invoke(app, ["prune", str(run_dir)]).exit_code == 0
    archive = json.loads((run_dir / "candidates.json").read_text())
    assert {e["branch"]: e["commit"] for e in archive} == heads
    assert {e["note"]["verdict"]["verdict"] for e in archive} == {"promoted", "rejected"}
    repo.git.fetch(str(run_dir / "candidates.bundle"), "refs/heads/cand/*:refs/heads/cand/*")
    assert {b: repo.commit(b).hexsha for b in _branches(repo)} == heads


def test_prune_twice_says_there_is_nothing_left(tmp_path: Path) -> None:
    run_dir, _repo = build(tmp_path, PLANS[:2])
    assert runner.invoke(app, ["prune", str(run_dir)]).exit_code == 0
    res = runner.invoke(app, ["prune", str(run_dir)])
    assert res.exit_code == 0 and "nothing to prune" in res.output
