"""Invalid harness output becomes an error naming file, line and field — never a crash of the loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meta_agent.contract import ContractError, MetricsRecord, RolloutRecord, read_jsonl

GOOD = {
    "rollout_id": "s1-g0-0", "step": 1, "task_id": "t", "group_id": "s1-g0", "prompt": "p", "completion": "c",
    "rewards": {"correctness": 0.0}, "reward": 0.0, "advantage": 0.0, "weight": 1.0, "prompt_tokens": 3,
    "completion_tokens": 4, "truncated": False, "labels": ["truncated"], "harness_commit": "abc",
}


def _write(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_valid_records_parse(tmp_path: Path) -> None:
    assert read_jsonl(_write(tmp_path / "r.jsonl", GOOD, GOOD), RolloutRecord)[1].rollout_id == "s1-g0-0"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"reward": "high"}, "reward"),
        ({"completion_tokens": -1}, "completion_tokens"),
        ({"labels": ["Not A Label!"]}, "labels.0"),
        ({"weight": -0.5}, "weight"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_field_is_named_with_file_and_line(tmp_path: Path, change: dict[str, object], field: str) -> None:
    path = _write(tmp_path / "rollouts.jsonl", GOOD, {**GOOD, **change})
    with pytest.raises(ContractError, match=rf"rollouts\.jsonl:2: field {field}"):
        read_jsonl(path, RolloutRecord)


def test_nan_is_rejected(tmp_path: Path) -> None:
    line = json.dumps({**GOOD, "reward": 0}).replace('"reward": 0', '"reward": NaN')
    path = _write(tmp_path / "rollouts.jsonl", line)
    with pytest.raises(ContractError, match=":1: field reward"):
        read_jsonl(path, RolloutRecord)


def test_broken_json_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match=r"metrics\.jsonl:1: not valid JSON"):
        read_jsonl(_write(tmp_path / "metrics.jsonl", "{oops"), MetricsRecord)


def test_a_partial_file_is_never_taken_for_a_finished_one(tmp_path: Path) -> None:
    _write(tmp_path / "rollouts.jsonl.partial", GOOD)
    with pytest.raises(ContractError, match=r"only a \.partial file exists"):
        read_jsonl(tmp_path / "rollouts.jsonl", RolloutRecord)
