"""The evidence folder a generation's coders read holds what the run had decided when that generation
started: a generation redone after a kill must not show its coders their siblings' diffs and verdicts."""

from __future__ import annotations

from pathlib import Path

from meta_agent.evolve.evidence import write_evidence
from tests.review.small_run import RUN_ID, Plan, build


def test_a_redone_generation_sees_no_candidate_of_its_own_or_later(tmp_path: Path) -> None:
    # generation 1 as a kill leaves it: its two candidates already decided and noted in git
    _run, repo = build(tmp_path, [Plan(0, 0, True), Plan(0, 1, False), Plan(1, 0, False), Plan(1, 1, True)])
    out = write_evidence(tmp_path / "evidence", generation=1, rollouts=[], report_md="# report", repo=repo,
                         main=repo.commit("main").hexsha, run_id=RUN_ID)
    shown = sorted(p.name for p in (out / "candidates").iterdir())
    assert shown == [f"{RUN_ID}_0-0", f"{RUN_ID}_0-1"], shown


def test_another_runs_candidates_stay_in_view(tmp_path: Path) -> None:
    _run, repo = build(tmp_path, [Plan(0, 0, False), Plan(1, 0, False)], run_id="20261101-090000-evolve-math")
    out = write_evidence(tmp_path / "evidence", generation=0, rollouts=[], report_md="", repo=repo,
                         main=repo.commit("main").hexsha, run_id=RUN_ID)
    assert len(list((out / "candidates").iterdir())) == 2, "an earlier run on the same harness is history"
