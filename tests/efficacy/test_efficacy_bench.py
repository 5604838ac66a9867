"""`bench/efficacy.py` on the tiny policy: all four arms run, get the compute they should, save their
per-task results, and the report's numbers are exactly what those files say. A re-run resumes. Every arm's
harness trains by script (tests/scripted_harness): tested is what the benchmark runs, counts and reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.efficacy_lib.splits import fingerprint
from tests.conftest import TEST_SANDBOX
from tests.evolve.conftest import data_env

pytestmark = pytest.mark.slow  # an evolve run and two rollouts on the tiny policy

BENCH = Path(__file__).resolve().parents[2] / "bench" / "efficacy.py"
ARMS = ("evolved", "static", "reference", "static_total")


def _bench(out: Path, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), "--preset", "tiny", "--seeds", "1", "--out", str(out),
                           "--sandbox", TEST_SANDBOX], capture_output=True, text=True, timeout=1500,
                          env={**data_env(data, scripted=True), "PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def test_the_benchmark_gives_every_arm_its_compute_and_reports_from_the_saved_results(tmp_path: Path) -> None:
    out = tmp_path / "efficacy"
    # evidence left by an attempt of this seed whose run was lost with its machine (only tracked files kept)
    stale = out / "seed-0" / "data" / "skills" / ".overlay" / "format-reward.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text("status: active\nretired_in: []\nevidence:\n- {run: evolve, harness_repo: /lost, commit: lost, "
                     "domain: math, metric: selection_delta, delta: 0.5, ci: [0.1, 0.9], verdict: promoted, "
                     "stage: gate, date: '2026-11-25'}\n")
    res = _bench(out, tmp_path / "data")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    [seed] = report["seeds"]
    c = seed["run"]["compute"]
    assert c["evolved"]["steps"] == c["static"]["steps"] == c["reference"]["steps"] >= 1
    assert c["evolved"]["completions"] == c["static"]["completions"] == c["reference"]["completions"]
    search = seed["run"]["search"]
    assert search["steps"] >= 1, "the noise rerun is search compute"
    assert c["static_total"]["steps"] == c["evolved"]["steps"] + search["steps"]

    scores = {}
    for arm in ARMS:
        saved = json.loads((out / "seed-0" / "results" / f"{arm}.json").read_text())
        assert saved["split"] == "test" and len(saved["results"]) == 6
        scores[arm] = {r["task_id"]: r["score"] for r in saved["results"]}
        assert seed["accuracy"][arm] == pytest.approx(sum(scores[arm].values()) / 6)
    for other in ("static", "reference", "static_total"):
        diff = sum(scores["evolved"][t] - scores[other][t] for t in scores["evolved"]) / 6
        assert seed["delta"][other]["mean"] == pytest.approx(diff)
        assert report["summary"][other]["mean"]["mean"] == pytest.approx(diff)
        wins = sum(1 for t in scores["evolved"] if scores["evolved"][t] > 0.5 >= scores[other][t])
        losses = sum(1 for t in scores["evolved"] if scores[other][t] > 0.5 >= scores["evolved"][t])
        assert (seed["mcnemar"][other]["wins"], seed["mcnemar"][other]["losses"]) == (wins, losses)
        assert report["summary"][other]["hierarchical"]["mean"] == pytest.approx(diff), "seeds, then tasks"
    assert "| evolved - | mean | IQM |" in (out / "report.md").read_text()
    t = seed["run"]["evolve_time"]
    assert 0 < t["train"] <= t["wall"] and "- seed 0: " in (out / "report.md").read_text(), "where the time went"
    # the evolve arm is read from journal times, which are to the second: within 1 s, it holds its generations
    assert t["wall"] <= seed["run"]["wall_s"]["evolve"] + 1.0, "the evolve arm (from its journal) holds them"
    assert "commit: lost" not in (stale.read_text() if stale.is_file() else ""), "a lost attempt steered the run"
    assert (out / "seed-0" / "data" / "sealed-secret").is_file(), \
        "the arms draw their splits from the seed's own secret, not from META_AGENT_SEALED_SECRET"
    reference = (out / "seed-0" / "reference-harness" / "harness.yaml").read_text()
    assert "learning_rate: 0.0001" in reference and "num_generations: 8" in reference

    assert report["search"] == {"confirm_steps": 0, "archive_parents": 0}, "the report says which search it measured"
    merged = seed["run"]["merged"]
    assert isinstance(merged, list)
    assert "## Candidates" in (out / "seed-0" / "evolve-summary.md").read_text(), "each verdict kept with the results"

    again = _bench(out, tmp_path / "data")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "meta-agent evolve" not in again.stdout and "meta-agent rollout" not in again.stdout, "finished arms kept"
    assert json.loads((out / "report.json").read_text()) == report

    table = subprocess.run([sys.executable, str(BENCH), "--compare", f"greedy={out}", f"same={out}"],
                           capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stderr[-2000:]
    rows = [line for line in table.stdout.splitlines() if line.startswith(("| greedy |", "| same |"))]
    evolved = f"{seed['accuracy']['evolved']:.3f}"
    splits = seed["splits"]
    assert splits == fingerprint(out / "seed-0") and len(splits) == 8, "which test tasks the seed was scored on"
    assert len(rows) == 2 and all(f"| 0 | {splits} | {evolved} |" in row for row in rows), table.stdout
    assert "not (or not knowingly)" not in table.stdout, "the same splits: paired rows"
    assert all(("; ".join(merged) or "nothing") in row for row in rows), "what the search merged, per row"

    # Killed in its last arm: wall.json is written only when the seed is done, yet the finished arms'
    # seconds must survive into the report, not be lost or taken from an older run.
    (out / "seed-0" / "wall.json").unlink()
    (out / "seed-0" / "results" / "static_total.json").unlink()
    resumed = _bench(out, tmp_path / "data")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "meta-agent evolve" not in resumed.stdout and "meta-agent eval" in resumed.stdout
    wall = json.loads((out / "report.json").read_text())["seeds"][0]["run"]["wall_s"]
    before = seed["run"]["wall_s"]
    assert wall["evolve"] == before["evolve"] and wall["reference"] == before["reference"], (wall, before)

    # Unfinished under a driver that kept only the arms' seconds (arm-seconds.json), its runs still here: the
    # compute is counted from the runs and the seconds taken from that file, not reported as 0.
    (out / "seed-0" / "wall.json").unlink()
    (out / "seed-0" / "arms.json").unlink()
    (out / "seed-0" / "arm-seconds.json").write_text(json.dumps({"reference": 12.5, "static_total": 30.0}))
    legacy = _bench(out, tmp_path / "data")
    assert legacy.returncode == 0, legacy.stdout[-3000:] + legacy.stderr[-3000:]
    assert "seed 0: meta-agent" not in legacy.stdout, "every arm was finished"
    legacy_run = json.loads((out / "report.json").read_text())["seeds"][0]["run"]
    assert legacy_run["wall_s"] == {"evolve": before["evolve"], "reference": 12.5, "static_total": 30.0}
    assert legacy_run["compute"] == seed["run"]["compute"]

    # A clone of the results: bench/results keeps each arm's per-task results and wall.json, not the runs
    # (.gitignore). Adding seeds there must keep this finished seed's record, not recount it as 0 steps.
    finished = json.loads((out / "report.json").read_text())
    for arm in ("evolve", "reference", "static_total"):
        shutil.rmtree(out / "seed-0" / arm)
    cloned = _bench(out, tmp_path / "data")
    assert cloned.returncode == 0, cloned.stdout[-3000:] + cloned.stderr[-3000:]
    assert "seed 0: meta-agent" not in cloned.stdout, "nothing re-run"
    assert json.loads((out / "report.json").read_text()) == finished

    # The machine was lost during the last arm and only the tracked files came back (results and arms.json,
    # not the runs): the seed finishes with that arm alone, and the earlier arms keep their compute.
    (out / "seed-0" / "wall.json").unlink()
    (out / "seed-0" / "results" / "static_total.json").unlink()
    lost = _bench(out, tmp_path / "data")
    assert lost.returncode == 0, lost.stdout[-3000:] + lost.stderr[-3000:]
    assert "meta-agent evolve" not in lost.stdout and "meta-agent resume" not in lost.stdout
    assert "reference-harness" not in lost.stdout, "the reference arm is not trained again"
    relost = json.loads((out / "report.json").read_text())["seeds"][0]["run"]
    assert relost["compute"] == finished["seeds"][0]["run"]["compute"]
    assert relost["merged"] == merged and relost["evolve_time"] == t

    # Without that record (a seed of a driver that kept only seconds), a saved result whose run is gone (the
    # runs are still the clone's: none)
    # cannot have its compute counted: it says so instead of counting 0.
    (out / "seed-0" / "wall.json").unlink()
    (out / "seed-0" / "arms.json").unlink()
    before = (out / "report.json").read_text()
    unknown = _bench(out, tmp_path / "data")
    assert unknown.returncode != 0 and "compute cannot be counted" in unknown.stdout + unknown.stderr
    assert (out / "report.json").read_text() == before, "nothing overwritten"
