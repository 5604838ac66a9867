"""`meta-agent show CANDIDATE`: hypothesis, cited rollouts, diff, every stage's numbers, verdict and why."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from meta_agent.cli import app
from tests.review.small_run import RUN_ID, Plan, build

runner = CliRunner()
PLANS = [Plan(0, 0, True), Plan(0, 1, False, "replay"), Plan(1, 0, False), Plan(1, 1, True)]


def test_show_within_a_run_prints_everything_about_the_candidate(tmp_path: Path) -> None:
    run_dir, _repo = build(tmp_path, PLANS)
    res = runner.invoke(app, ["show", "g0/c1", str(run_dir)], terminal_width=200)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "hypothesis truncated: 42% truncated in gen 0" in out
    assert "intervention cap the length, variant 1" in out
    assert "r-0-1: reward 0.250, verified False, labels truncated" in out
    assert "r-missing: (not in the run's rollouts)" in out
    assert "+max_completion_length: 101" in out  # the diff
    assert "probes_rewarded=0.0" in out and "probe p1 rewarded more" in out  # stage numbers and reasons
    assert "verdict rejected at replay: probe p1 rewarded more" in out


def test_show_by_full_id_from_the_harness_as_json(tmp_path: Path) -> None:
    _run_dir, repo = build(tmp_path, PLANS)
    res = runner.invoke(app, ["show", f"{RUN_ID}/1-0", str(repo.working_dir), "--json"])
    assert res.exit_code == 0, res.output
    detail = json.loads(res.output)
    c = detail["candidate"]
    assert c["verdict"] == "rejected" and c["reason"] == "CI includes 0"
    assert [s["stage"] for s in c["stages"]] == ["static", "replay", "train"]
    assert c["stages"][2]["metrics"]["delta"] == -0.04
    assert "harness/cap_1_0.txt" in detail["diff"]


def test_an_unknown_candidate_is_one_error_listing_the_known_ones(tmp_path: Path) -> None:
    _run_dir, repo = build(tmp_path, PLANS[:2])
    res = runner.invoke(app, ["show", "g7/c3", str(repo.working_dir)])
    assert res.exit_code == 1
    assert "no candidate 'g7/c3'" in res.output and "g0/c1" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
