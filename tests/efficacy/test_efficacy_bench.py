"""`bench/efficacy.py` on the tiny policy: evolution starts from the reference harness, every arm runs (the two
search controls, the retrained harness, the noise-floor pair, leave-one-out) at the policy compute it should
get, on the seed's own freshly drawn sealed splits, and the report's numbers are exactly what the saved
per-task files say. A re-run resumes; a clone with only the results and records finishes without recounting.
Every arm's harness trains by script (tests/scripted_harness): tested is what the benchmark runs, counts and
reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from bench.efficacy_lib.records import FIXED_ARMS
from bench.efficacy_lib.report import COMPARISONS
from bench.efficacy_lib.splits import fingerprint
from meta_agent.eventlog import EventLog
from meta_agent.journal import CandidateCreated
from tests.conftest import TEST_SANDBOX
from tests.evolve.conftest import data_env

pytestmark = pytest.mark.slow  # two evolve runs and eight trainings on the tiny policy

BENCH = Path(__file__).resolve().parents[2] / "bench" / "efficacy.py"


def _bench(out: Path, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), "--preset", "tiny", "--seeds", "1", "--out", str(out),
                           "--sandbox", TEST_SANDBOX], capture_output=True, text=True, timeout=1500,
                          env={**data_env(data, scripted=True), "PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def _ran(res: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in res.stdout.splitlines() if line.startswith("seed 0: meta-agent")]


def test_every_arm_trains_at_equal_compute_from_the_reference_and_is_reported_from_its_saved_results(
        tmp_path: Path) -> None:
    out = tmp_path / "efficacy"
    seed_dir = out / "seed-0"
    # evidence left by an attempt of this seed whose run was lost with its machine (only tracked files kept)
    stale = seed_dir / "data" / "skills" / ".overlay" / "format-reward.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text("status: active\nretired_in: []\nevidence:\n- {run: evolve, harness_repo: /lost, commit: lost, "
                     "domain: math, metric: selection_delta, delta: 0.5, ci: [0.1, 0.9], verdict: promoted, "
                     "stage: gate, date: '2026-11-25'}\n")
    res = _bench(out, tmp_path / "data")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    [seed] = report["seeds"]
    run = seed["run"]
    c = run["compute"]

    # Equal policy compute: every arm but reference_total trained as many steps as the evolved policy.
    policy = c["evolved"]["steps"]
    assert policy >= 1
    for arm in (*FIXED_ARMS, *run["left_out"]):
        if arm != "reference_total":
            assert c[arm]["steps"] == policy, (arm, c[arm])
    assert c["reference"]["completions"] == c["evolved"]["completions"] == c["random_search"]["completions"]
    search = run["search"]["evolved"]
    assert search["steps"] >= 1, "the noise rerun is search compute"
    assert c["reference_total"]["steps"] == policy + search["steps"]
    assert run["search"]["random_search"]["steps"] >= 1, "the random control searched with the same budget"

    # Evolution started from the reference harness, and the random control proposed blind.
    evolved_history = git.Repo(seed_dir / "evolve-harness").git.log("--format=%s", "main")
    assert "Reference GRPO settings for the efficacy benchmark" in evolved_history
    reference = (seed_dir / "reference-harness" / "harness.yaml").read_text()
    assert "learning_rate: 0.0001" in reference and "num_generations: 8" in reference
    assert "Reference GRPO" not in git.Repo(seed_dir / "template-harness").git.log("--format=%s")
    random_titles = [e.title for e in EventLog(seed_dir / "random").of_type(CandidateCreated)]
    assert random_titles and all(t.startswith("Random control: apply skill ") for t in random_titles)

    # Blind bundle: what fired, what was applied on top of the reference.
    bundle = run["bundle"]
    assert bundle["triggered"] and set(bundle["applied"]) | set(bundle["already"]) | set(bundle["failed"]) == \
        set(bundle["triggered"])
    bundled = git.Repo(seed_dir / "bundle-harness").head.commit
    assert (bundled.message.startswith("Blind bundle")) == bool(bundle["applied"])

    # Leave-one-out: each top merged change left out, or the reason it could not be.
    assert run["changes"], "the scripted search merges a change on this seed"
    for change in run["changes"]:
        assert change["kind"] in ("config", "code") and change["parts"], change
    assert len(run["left_out"]) + len(run["not_left_out"]) == min(1, len(run["changes"]))
    for arm in run["left_out"]:
        undone = git.Repo(seed_dir / f"{arm}-harness").head.commit
        assert undone.message.startswith("Revert") and undone.parents[0].hexsha == \
            git.Repo(seed_dir / "evolve-harness").commit("main").hexsha
        # Without the only merged change, the harness is the reference's files: reference_rollout's job, not
        # trained and scored twice.
        reference_files = undone.tree.hexsha == git.Repo(seed_dir / "reference-harness").head.commit.tree.hexsha
        assert (run["reused"].get(arm) == "reference_rollout") == reference_files, (arm, run["reused"])
        assert reference_files == (len(run["changes"]) == 1), "one merged change left out is the reference"
        if reference_files:
            assert run["wall_s"][arm] == 0 and not (seed_dir / arm).exists()
            assert (seed_dir / "results" / f"{arm}.json").read_text() == \
                (seed_dir / "results" / "reference_rollout.json").read_text()

    # The report's numbers are what the saved per-task files say.
    scores = {}
    for arm in (*FIXED_ARMS, *run["left_out"]):
        saved = json.loads((seed_dir / "results" / f"{arm}.json").read_text())
        assert saved["split"] == "test" and len(saved["results"]) == 6
        scores[arm] = {r["task_id"]: r["score"] for r in saved["results"]}
        assert seed["accuracy"][arm] == pytest.approx(sum(scores[arm].values()) / 6)
    pairs = {**COMPARISONS, **{f"retrained - {arm}": ("retrained", arm) for arm in run["left_out"]}}
    assert set(seed["paired"]) == set(pairs)
    for name, (treatment, control) in pairs.items():
        diff = sum(scores[treatment][t] - scores[control][t] for t in scores[treatment]) / 6
        assert seed["paired"][name]["delta"]["mean"] == pytest.approx(diff), name
        wins = sum(1 for t in scores[treatment] if scores[treatment][t] > 0.5 >= scores[control][t])
        losses = sum(1 for t in scores[treatment] if scores[control][t] > 0.5 >= scores[treatment][t])
        assert (seed["paired"][name]["mcnemar"]["wins"], seed["paired"][name]["mcnemar"]["losses"]) == (wins, losses)
        if name in COMPARISONS:
            assert report["summary"][name]["hierarchical"]["mean"] == pytest.approx(diff), "seeds, then tasks"
    text = (out / "report.md").read_text()
    assert "## Targets" in text and "| arm | level " in text and "noise floor" in text
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| merged change |"):  # its rows follow its header: a line between would end the table
            assert lines[i + 1].startswith("|---") and all(r.startswith("| ") for r in lines[i + 2:i + 2 + len(
                run["changes"])]), lines[i:i + 4]
    assert report["search"] == {"proposer": "skills", "confirm_steps": 0, "search_steps": 0, "archive_parents": 0}
    assert "## Candidates" in (seed_dir / "evolve-summary.md").read_text(), "each verdict kept with the results"
    assert "commit: lost" not in (stale.read_text() if stale.is_file() else ""), "a lost attempt steered the run"

    # A fresh secret for the seed, shared by every arm, named in the report only by its fingerprint.
    secret = (seed_dir / "data" / "sealed-secret").read_text().strip()
    assert len(secret) >= 32 and secret != os.environ["META_AGENT_SEALED_SECRET"]
    assert (seed_dir / "data-random" / "sealed-secret").read_text().strip() == secret, "random search: same tasks"
    assert seed["splits"] == fingerprint(seed_dir) and len(seed["splits"]) == 8
    kept = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".md", ".yaml")
            and not {"data", "data-random"} & set(p.relative_to(out).parts)]
    assert not [p for p in kept if secret in p.read_text(errors="replace")], "the secret leaked into the results"

    again = _bench(out, tmp_path / "data")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert not _ran(again), "finished arms kept"
    assert json.loads((out / "report.json").read_text()) == report

    table = subprocess.run([sys.executable, str(BENCH), "--compare", f"greedy={out}", f"same={out}"],
                           capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stderr[-2000:]
    rows = [line for line in table.stdout.splitlines() if line.startswith(("| greedy |", "| same |"))]
    evolved = f"{seed['accuracy']['evolved']:.3f}"
    assert len(rows) == 2 and all(f"| 0 | {seed['splits']} | {evolved} |" in row for row in rows), table.stdout
    assert "not (or not knowingly)" not in table.stdout, "the same splits: paired rows"

    # Killed in its last arm's evaluation: only that evaluation runs again (its training is finished), and
    # the finished arms keep their seconds.
    (seed_dir / "wall.json").unlink()
    (seed_dir / "results" / "reference_total.json").unlink()
    resumed = _bench(out, tmp_path / "data")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert [line.split()[3] for line in _ran(resumed)] == ["eval"], _ran(resumed)
    assert "reference_total" in _ran(resumed)[0]
    resumed_run = json.loads((out / "report.json").read_text())["seeds"][0]["run"]
    assert resumed_run["wall_s"]["evolve"] == run["wall_s"]["evolve"]
    assert resumed_run["compute"] == run["compute"]

    # The evolve arm lost with its run (its result deleted to run it again): a new search, so the arms made
    # from the old one's harness, first report and compute run again; the others are kept.
    shutil.rmtree(seed_dir / "evolve")
    for name in ("evolved", "reference"):
        (seed_dir / "results" / f"{name}.json").unlink()
    (seed_dir / "wall.json").unlink()
    redone = _bench(out, tmp_path / "data")
    assert redone.returncode == 0, redone.stdout[-3000:] + redone.stderr[-3000:]
    rerun = {line.split("--run-dir ")[1].split()[0].rsplit("/", 1)[1] for line in _ran(redone) if "--run-dir" in line}
    trained = [arm for arm in run["left_out"] if arm not in run["reused"]]
    assert rerun == {"evolve", "retrained", "blind_bundle", "reference_total", *trained}, rerun

    # A clone of the results: bench/results keeps each arm's per-task results and records, not the runs
    # (.gitignore). Reporting there must keep this finished seed's record, not recount it as 0 steps.
    finished = json.loads((out / "report.json").read_text())
    for arm in ("evolve", "random", *[a for a in FIXED_ARMS if (seed_dir / a).is_dir()], *run["left_out"]):
        shutil.rmtree(seed_dir / arm, ignore_errors=True)
    cloned = _bench(out, tmp_path / "data")
    assert cloned.returncode == 0, cloned.stdout[-3000:] + cloned.stderr[-3000:]
    assert not _ran(cloned), "nothing re-run"
    assert json.loads((out / "report.json").read_text()) == finished

    # Without the arms' record, a saved result whose run is gone cannot have its compute counted: it says so
    # instead of counting 0, and overwrites nothing.
    (seed_dir / "wall.json").unlink()
    (seed_dir / "arms.json").unlink()
    before = (out / "report.json").read_text()
    unknown = _bench(out, tmp_path / "data")
    assert unknown.returncode != 0 and "compute cannot be counted" in unknown.stdout + unknown.stderr
    assert (out / "report.json").read_text() == before, "nothing overwritten"
