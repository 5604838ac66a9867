"""Records meta-agent reads back: a policy's huge output never makes the whole training's output invalid."""

from __future__ import annotations

import json

from harness.io import MAX_LINE_BYTES, dumps, rollout_record


def _record(diff: str, transcript: str) -> dict[str, object]:
    return rollout_record(rollout_id="r", step=1, task_id="t", group_id="g", prompt="p", completion="c",
                          rewards={"resolved": 0.0}, reward=0.0, advantage=0.0, weight=1.0, prompt_tokens=1,
                          completion_tokens=1, truncated=False, labels=[], harness_commit="h",
                          extra={"diff": diff, "transcript": transcript, "commands": ["python -m venv venv"]})


def test_an_episode_that_diffs_a_whole_virtualenv_is_cut_to_fit_and_says_so() -> None:
    diff = "diff --git a/venv/bin/python b/venv/bin/python\n" + "+é\n" * 3_000_000
    line = dumps(_record(diff, "turn 1\n" * 10))
    assert len(line.encode("utf-8")) <= MAX_LINE_BYTES
    got = json.loads(line)
    assert got["extra"]["diff"].startswith("diff --git a/venv/bin/python")
    assert "characters cut" in got["extra"]["diff"]
    assert got["extra"]["transcript"] == "turn 1\n" * 10
    assert got["extra"]["commands"] == ["python -m venv venv"]


def test_a_record_that_fits_is_written_as_it_is() -> None:
    record = _record("diff --git a/x b/x\n", "turn")
    assert json.loads(dumps(record)) == json.loads(json.dumps(record))
