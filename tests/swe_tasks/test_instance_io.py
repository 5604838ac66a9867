"""SWE-bench / SWE-Gym JSONL in and out, and hash-checked task sets in the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import read_instances, write_instances
from meta_agent.swe.taskset import import_tasks, list_tasksets, load_tasks

SWE_BENCH_ROW = {
    "repo": "astropy/astropy",
    "instance_id": "astropy__astropy-12907",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "patch": "diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py\n",
    "test_patch": "diff --git a/astropy/modeling/tests/test_separable.py b/astropy/modeling/tests/test_separable.py\n",
    "problem_statement": "Modeling's `separability_matrix` does not compute separability correctly",
    "hints_text": "",
    "created_at": "2022-03-03T15:14:54Z",
    "version": "4.3",
    "FAIL_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
    "PASS_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
    "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
}


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_swe_bench_rows_with_json_encoded_test_lists_are_read(tmp_path: Path) -> None:
    [inst] = read_instances(_write_jsonl(tmp_path / "swe.jsonl", [SWE_BENCH_ROW]))
    assert inst.FAIL_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]
    assert inst.PASS_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_coord_matrix"]
    assert inst.project == "astropy"


def test_written_files_read_back_identically(tmp_path: Path) -> None:
    [inst] = read_instances(_write_jsonl(tmp_path / "swe.jsonl", [SWE_BENCH_ROW]))
    write_instances(tmp_path / "out.jsonl", [inst], with_private=False)
    row = json.loads((tmp_path / "out.jsonl").read_text())
    assert isinstance(row["FAIL_TO_PASS"], list) and row["instance_id"] == SWE_BENCH_ROW["instance_id"]
    assert read_instances(tmp_path / "out.jsonl") == [inst]


def test_a_bad_record_names_file_line_and_field(tmp_path: Path) -> None:
    bad = dict(SWE_BENCH_ROW)
    del bad["base_commit"]
    path = _write_jsonl(tmp_path / "bad.jsonl", [SWE_BENCH_ROW, bad])
    with pytest.raises(SweTaskError, match=r"bad\.jsonl:2: field base_commit"):
        read_instances(path)


def test_import_then_load_verifies_the_hash(swe_cache: Path, tmp_path: Path) -> None:
    rows = [dict(SWE_BENCH_ROW, instance_id=f"astropy__astropy-{n}") for n in range(5)]
    manifest = import_tasks(_write_jsonl(tmp_path / "gym.jsonl", rows), name="gym", split="train")
    assert manifest.counts == {"train": 5, "selection": 0, "test": 0}
    assert [i.instance_id for i in load_tasks("train", "gym")] == [r["instance_id"] for r in rows]
    assert "gym" in {m.name for m in list_tasksets()}
    train = swe_cache / "swe" / "tasksets" / "gym" / "train.jsonl"
    train.write_text(train.read_text().replace("astropy-3", "astropy-9"))
    with pytest.raises(SweTaskError, match="manifest hash"):
        load_tasks("train", "gym")


def test_duplicate_ids_are_refused(swe_cache: Path, tmp_path: Path) -> None:
    with pytest.raises(SweTaskError, match="more than once"):
        import_tasks(_write_jsonl(tmp_path / "dup.jsonl", [SWE_BENCH_ROW, SWE_BENCH_ROW]), name="dup")


def test_missing_default_set_says_how_to_build_it(swe_cache: Path) -> None:
    with pytest.raises(SweTaskError, match="meta-agent tasks build --default"):
        load_tasks("train")
