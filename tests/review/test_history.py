"""`meta-agent history`: every candidate per generation, merged and rejected, from git notes and trailers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.skills.model import SkillMeta
from meta_agent.skills.skill_files import write_skill_files
from tests.review.small_run import RUN_ID, Plan, build

runner = CliRunner()
PLANS = [Plan(0, 0, True), Plan(0, 1, False, "replay"), Plan(1, 0, False), Plan(1, 1, True)]


def _history(*args: str) -> dict[str, Any]:
    res = runner.invoke(app, ["history", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _candidates(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["short"]: c for run in data["runs"] for g in run["generations"] for c in g["candidates"]}


def test_history_shows_every_candidate_merged_and_rejected_per_generation(tmp_path: Path) -> None:
    _run_dir, repo = build(tmp_path, PLANS)
    data = _history(str(repo.working_dir))
    [run] = data["runs"]
    assert run["run_id"] == RUN_ID
    assert [g["generation"] for g in run["generations"]] == [0, 1]
    assert [[c["short"] for c in g["candidates"]] for g in run["generations"]] == [["g0/c0", "g0/c1"],
                                                                                 ["g1/c0", "g1/c1"]]
    c = _candidates(data)
    assert c["g0/c0"]["merged"] and c["g0/c0"]["stage_reached"] == "merge"
    assert c["g0/c0"]["delta"] == 0.12 and c["g0/c0"]["ci"] == pytest.approx([0.07, 0.17])
    assert not c["g0/c1"]["merged"] and c["g0/c1"]["verdict"] == "rejected"
    assert c["g0/c1"]["stage_reached"] == "replay" and c["g0/c1"]["delta"] is None
    assert c["g1/c0"]["stage_reached"] == "train" and c["g1/c0"]["delta"] == -0.04
    assert c["g1/c0"]["hypothesis"] == "truncated: 42% truncated in gen 1"
    assert all(x["measured_kind"] == "performance" and x["skills_used"] == ["overlong-shaping"] for x in c.values())


def test_the_table_names_each_candidate_with_its_verdict_and_hypothesis(tmp_path: Path) -> None:
    _run_dir, repo = build(tmp_path, PLANS)
    res = runner.invoke(app, ["history", str(repo.working_dir)], terminal_width=160)
    assert res.exit_code == 0, res.output
    assert "generation 1" in res.output
    row = next(line for line in res.output.splitlines() if line.startswith("│ g1/c0"))
    assert "rejected" in row and "train" in row and "-0.040 [-0.090, +0.010]" in row
    assert "g0/c1 Shape reward g0 c1: truncated: 42% truncated in gen 0" in res.output


def test_without_all_only_the_last_run_is_shown(tmp_path: Path) -> None:
    _first, repo = build(tmp_path, PLANS[:2], run_id="20261122-100000-evolve-math")
    build(tmp_path / "later", [Plan(0, 0, False)], run_id="20261122-110000-evolve-math",
          harness=Path(repo.working_dir))
    assert [r["run_id"] for r in _history(str(repo.working_dir))["runs"]] == ["20261122-110000-evolve-math"]
    assert [r["run_id"] for r in _history(str(repo.working_dir), "--all")["runs"]] == [
        "20261122-100000-evolve-math", "20261122-110000-evolve-math"]


def test_given_a_run_directory_it_shows_that_run_with_the_skills_learned(tmp_path: Path) -> None:
    run_dir, repo = build(tmp_path, PLANS)
    build(tmp_path / "later", [Plan(0, 0, False)], run_id="20261122-110000-evolve-math",
          harness=Path(repo.working_dir))
    learned = run_dir / "skills" / "cap-length"
    learned.mkdir(parents=True)
    write_skill_files(learned, SkillMeta(
        name="cap-length", description="Cap completion length when answers run on.",
        provenance={"source": "llm", "run": RUN_ID, "candidate": f"{RUN_ID}/1-1"}), "## How\ncap it\n")
    data = _history(str(run_dir))
    assert [r["run_id"] for r in data["runs"]] == [RUN_ID]
    assert _candidates(data)["g1/c1"]["skills_learned"] == ["cap-length"]


def test_plain_git_log_tells_the_same_story(tmp_path: Path) -> None:
    """Every verdict history reports is in `git log --notes` of the candidate's commit, beside its trailers."""
    _run_dir, repo = build(tmp_path, PLANS)
    for c in _candidates(_history(str(repo.working_dir))).values():
        log = git.Repo(repo.working_dir).git.log("-1", "--notes", c["commit"])
        assert f"Hypothesis: {c['hypothesis']}" in log
        assert f"Candidate: {c['cand_id']}" in log
        assert f'"verdict": "{c["verdict"]}"' in log
        assert f'"reason": "{c["reason"]}"' in log


def test_a_candidate_built_on_an_archived_one_names_it_from_git_alone(tmp_path: Path) -> None:
    from meta_agent.gitops import ARCHIVE_MERGE, commit_dir, export_tree, init_harness, merge_commit, merge_no_ff
    from meta_agent.review.candidates import built_on

    repo = init_harness(tmp_path / "harness", "math")

    def change(parent: str, branch: str, name: str) -> str:
        work = export_tree(repo, parent, tmp_path / "work")
        (work / "harness" / f"{name}.txt").write_text(name)
        return commit_dir(repo, work, parent, branch, f"Apply {name}")

    archived = change(repo.commit("main").hexsha, "cand/r/0-1", "recipe")
    winner = change(repo.commit("main").hexsha, "cand/r/0-0", "winner")
    merge_no_ff(repo, "cand/r/0-0", "Merge candidate r/0-0")  # main now ends in a merge of its own
    under = merge_commit(repo, archived, f"{ARCHIVE_MERGE}r/0-1")
    child = change(under, "cand/r/1-1", "shaping")
    plain = change(repo.commit("main").hexsha, "cand/r/1-0", "format")
    assert built_on(repo, child) == "r/0-1"
    assert built_on(repo, plain) is None, "main's own merges are not an archived parent"
    assert built_on(repo, archived) is None and built_on(repo, winner) is None
