"""`--json` on the listing commands: output a program can parse, with the keys documented here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.llm.accounting import USAGE_FILE, Ledger
from meta_agent.swe.taskset import import_tasks
from tests.review.small_run import RUN_ID, Plan, build
from tests.swe_tasks.test_instance_io import SWE_BENCH_ROW

runner = CliRunner()


def _json(args: list[str]) -> object:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_lineage_json_lists_each_candidate_with_its_stages(tmp_path: Path) -> None:
    run_dir, _repo = build(tmp_path, [Plan(0, 0, True), Plan(0, 1, False, "replay")])
    data = _json(["lineage", str(run_dir)])
    assert isinstance(data, dict)
    assert data["run"]["run_id"] == RUN_ID and data["run"]["status"] == "done"
    by_id = {c["cand_id"]: c for c in data["candidates"]}
    rejected = by_id[f"{RUN_ID}/0-1"]
    assert rejected["verdict"] == "rejected" and rejected["stage"] == "replay"
    assert [(s["stage"], s["passed"]) for s in rejected["stages"]] == [("static", True), ("replay", False)]
    assert rejected["skills"] == ["overlong-shaping"]
    assert by_id[f"{RUN_ID}/0-0"]["merge_commit"]


def test_skills_list_json_gives_each_skill_its_record_and_library(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_AGENT_DATA", str(tmp_path / "data"))
    assert runner.invoke(app, ["skills", "retire", "clip-higher", "--domain", "math"]).exit_code == 0
    rows = _json(["skills", "list", "--all"])
    assert isinstance(rows, list)
    clip = next(r for r in rows if r["name"] == "clip-higher")
    assert clip["library"] == "seed" and clip["retired_in"] == ["math"] and clip["status"] == "active"
    assert (clip["wins"], clip["tests"]) == (0, 0)
    math_rows = _json(["skills", "list", "--domain", "math"])
    assert isinstance(math_rows, list) and "clip-higher" not in {r["name"] for r in math_rows}


def test_tasks_list_json_gives_each_set_its_counts_and_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_AGENT_CACHE", str(tmp_path / "cache"))
    assert _json(["tasks", "list"]) == []
    rows = [dict(SWE_BENCH_ROW, instance_id=f"astropy__astropy-{n}") for n in range(3)]
    source = tmp_path / "gym.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = import_tasks(source, name="gym", split="train")
    [entry] = _json(["tasks", "list"])  # type: ignore[misc]
    assert entry["name"] == "gym" and entry["manifest_hash"] == manifest.digest
    assert entry["counts"] == {"train": 3, "selection": 0, "test": 0}
    assert entry["projects"] == {"astropy": {"train": 3, "selection": 0, "test": 0}}


def test_llm_usage_json_gives_totals_per_agent_and_per_generation(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / USAGE_FILE)
    ledger.record("coder", "g0", 1000, 200, 0.01)
    ledger.record("diagnostician", "g1", 500, 100, None)
    data = _json(["llm", "usage", str(tmp_path)])
    assert isinstance(data, dict)
    assert data["total"]["calls"] == 2 and data["total"]["prompt_tokens"] == 1500
    assert data["by_agent"]["coder"]["dollars"] == 0.01 and data["by_scope"]["g1"]["unpriced_calls"] == 1
