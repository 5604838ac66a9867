"""End to end: `meta-agent evolve` on the tiny policy, 2 generations x 2 candidates, skills proposer,
real sandbox, with one deliberately broken candidate among the skills."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from meta_agent.eventlog import EventLog
from meta_agent.gitops import read_note, trailers
from meta_agent.journal import EVENT_TYPES, StageDone
from meta_agent.journal_keys import GRAMMAR, CandidateId
from meta_agent.lineage import check_against_git, query, rebuild_index
from meta_agent.paths import seed_skills
from meta_agent.skills.store import load_skill
from meta_agent.verdicts import STAGE_ORDER
from tests.conftest import journal

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def _data(run: Path, type_: str) -> list[dict]:
    return journal(run, EVENT_TYPES[type_])


def test_candidates_live_on_branches_whose_commits_carry_the_trailers(reference_run: Path) -> None:
    repo = git.Repo(reference_run / "harness")
    created = [c for c in _data(reference_run, "candidate_created") if c["ok"]]
    assert len(created) >= 3
    heads = {h.name: h.commit.hexsha for h in repo.heads}
    for c in created:
        assert c["branch"] == f"cand/{c['cand_id']}"
        assert heads[c["branch"]] == c["commit"]
        t = trailers(repo, c["commit"])
        assert {"Hypothesis", "Predicted-Effect", "Skills-Used"} <= t.keys()
        assert t["Skills-Used"] == ", ".join(c["skills"])


def test_the_cascade_runs_in_order_and_stops_at_the_first_failure(reference_run: Path) -> None:
    stages = _data(reference_run, "stage_done")
    by_cand: dict[str, list[dict[str, Any]]] = {}  # candidates interleave: their backtests run together
    for s in stages:
        by_cand.setdefault(s["cand_id"], []).append(s)
    for cand, seq in by_cand.items():
        assert [s["stage"] for s in seq] == list(STAGE_ORDER[: len(seq)]), cand
        failures = [i for i, s in enumerate(seq) if not s["passed"]]
        assert not failures or failures[0] == len(seq) - 1, f"{cand} ran a stage after a failure"
    broken = next(v for v in _data(reference_run, "verdict") if v["skills"] == ["broken-reward-fix"])
    assert broken["verdict"] == "rejected" and broken["stage"] == "static"
    assert "selftest failed" in broken["reason"] and "module_that_does_not_exist" in broken["reason"]
    assert [s["stage"] for s in stages if s["cand_id"] == broken["cand_id"]] == ["implement", "static"]


def test_a_winner_is_merged_with_backtest_verdict_and_notes(reference_run: Path) -> None:
    repo = git.Repo(reference_run / "harness")
    merged = _data(reference_run, "merged")
    assert merged, "expected at least one promoted candidate"
    mainline = [c.hexsha for c in repo.iter_commits("main", first_parent=True)]
    for m in merged:
        assert m["merge_commit"] in mainline
        commit = repo.commit(m["merge_commit"])
        assert len(commit.parents) == 2, "winners are merged with --no-ff"
        t = trailers(repo, m["merge_commit"])
        assert t["Backtest"].startswith("implement=pass static=pass replay=pass")
        assert t["Verdict"].startswith("promoted")
        note = json.loads(read_note(repo, m["merge_commit"]) or "{}")
        assert note["verdict"]["verdict"] == "promoted"
    strict = (reference_run / "harness" / "harness" / "math" / "rewards.py").read_text()
    assert "exactly one distinct 'Answer: N' value" in strict, "the user's checkout follows main"


def test_losers_stay_as_branches_with_their_verdict_in_a_note(reference_run: Path) -> None:
    repo = git.Repo(reference_run / "harness")
    created = {c["cand_id"]: c for c in _data(reference_run, "candidate_created") if c["ok"]}
    losers = [v for v in _data(reference_run, "verdict") if v["verdict"] == "rejected" and v["cand_id"] in created]
    assert losers
    for v in losers:
        note = json.loads(read_note(repo, created[v["cand_id"]]["commit"]) or "{}")
        assert note["verdict"]["reason"] == v["reason"]


def test_the_lineage_index_matches_git(reference_run: Path) -> None:
    rebuild_index(reference_run)
    assert check_against_git(reference_run, git.Repo(reference_run / "harness")) == []
    rows = query(reference_run, "SELECT COUNT(*) AS n FROM candidates WHERE verdict IS NOT NULL")
    assert rows[0]["n"] == len(_data(reference_run, "verdict"))
    gens = query(reference_run, "SELECT gen FROM generations ORDER BY gen")
    assert [r["gen"] for r in gens] == [0, 1]


def test_the_final_report_compares_evolved_with_static(reference_run: Path) -> None:
    summary = json.loads((reference_run / "summary.json").read_text())
    final = summary["final"]
    assert {"evolved", "static", "paired"} <= final.keys()
    assert final["evolved"]["n"] == final["static"]["n"] == 6
    md = (reference_run / "summary.md").read_text()
    assert "static harness (same compute)" in md and "paired difference" in md
    assert len(summary["generations"]) == 2


def test_the_run_ends_with_its_lineage_page(reference_run: Path) -> None:
    page = (reference_run / "lineage.html").read_text()
    for c in _data(reference_run, "candidate_created"):
        assert f'data-cand="{c["cand_id"]}"' in page
    assert "paired difference (evolved − static)" in page
    assert 'href="gen-000/main/report.html"' in page  # main's training report, linked relatively
    backtests = sorted(reference_run.glob("gen-*/cand-*/train"))
    assert backtests, "the reference run has candidates that reached the training backtest"
    for out in backtests:  # and each backtest's own report, beside it
        assert (out / "report.html").is_file()
        assert f'href="{out.relative_to(reference_run).as_posix()}/report.html"' in page


def test_each_generation_leaves_an_evidence_folder_with_every_rollout_and_nothing_sealed(
        reference_run: Path) -> None:
    from meta_agent.domains.math import MathDomain, MathSettings

    evidence = reference_run / "gen-001" / "evidence"
    main_rollouts = (reference_run / "gen-001" / "main" / "rollouts.jsonl").read_text().splitlines()
    index = (evidence / "rollouts" / "index.tsv").read_text().splitlines()
    assert len(index) == 1 + len(main_rollouts) == 1 + len(list((evidence / "rollouts").glob("*.json")))
    earlier = sorted(p.name for p in (evidence / "candidates").iterdir())
    assert earlier == sorted(c["cand_id"].replace("/", "_") for c in _data(reference_run, "candidate_created")
                             if c["gen"] == 0 and c["ok"]), "generation 0's candidates, with their verdicts"
    assert any((evidence / "candidates" / name / "diff.patch").read_text().startswith("diff --git") for name in earlier)
    text = "\n".join(p.read_text() for p in evidence.rglob("*") if p.is_file())
    math = MathDomain(MathSettings(train_size=24, selection_size=6, test_size=6, eval_max_new_tokens=6))
    sealed = [t for split in ("selection", "test") for t in math.tasks(split)]
    assert not [t.id for t in sealed if t.id in text], "no sealed task's id in the evidence"
    assert not [t.prompt for t in sealed if f'"prompt": {json.dumps(t.prompt)}' in text], "nor its prompt"


def test_a_recipe_candidate_applies_every_member_and_each_skill_records_its_own_params(reference_run: Path) -> None:
    """The tiny policy does not move in 1 step (noise floor 0): generation 1 tries the triggered training
    settings as one candidate, and each member's evidence names only its own parameters."""
    recipe = next(c for c in _data(reference_run, "candidate_created") if len(c["skills"]) > 1)
    assert recipe["skills"][0] == "learning-rate" and recipe["ok"]
    config = yaml.safe_load(git.Repo(reference_run / "harness").git.show(f"{recipe['commit']}:harness.yaml"))
    assert config["rl"]["learning_rate"] == 1e-4 and config["curriculum"]["strategy"] == "easy_first"
    overlay = reference_run.parent / "data" / "skills" / ".overlay"
    for name in recipe["skills"]:
        evidence = yaml.safe_load((overlay / f"{name}.yaml").read_text())["evidence"]
        mine = [e for e in evidence if e["commit"] == recipe["commit"]]
        own = load_skill(seed_skills() / name).meta.params
        assert len(mine) == 1 and mine[0]["params"] == own, f"{name}: {mine}"


def test_every_journal_key_follows_the_one_grammar(reference_run: Path) -> None:
    """`resume` finds finished steps by key: a key built by hand somewhere else would not be found."""
    keys = [r.key for r in EventLog(reference_run, repair=False).records if r.key]
    assert keys, "the run journaled its steps"
    assert [k for k in keys if not GRAMMAR.match(k)] == []
    expected = {"run/start", "g0/start", "g0/c0/verdict", "g1/merge/c0", "g1/done", "final/compare", "run/done"}
    assert expected <= set(keys)
    stages = [r.event for r in EventLog(reference_run, repair=False).records if isinstance(r.event, StageDone)]
    branches = {h.name for h in git.Repo(reference_run / "harness").heads}
    for stage in stages:
        cid = CandidateId.parse(stage.cand_id)
        assert stage.cand_id.startswith(str(cid)) and cid.run_id == reference_run.name
        if stage.stage == "implement" and stage.passed:
            assert cid.branch in branches, f"{cid} was implemented but has no branch {cid.branch}"
