"""The journal never loses a step silently: a torn last line (whatever its shape) is set aside on load and
its step redone, appends start on a fresh line, and nothing but that explicit, reported repair shortens it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meta_agent.eventlog import EventLog, JournalError
from meta_agent.journal import GenerationStarted, RunDone
from meta_agent.lineage import rebuild_index


def _journal(run: Path, n: int) -> Path:
    log = EventLog(run)
    for i in range(n):
        log.append(GenerationStarted(main=f"c{i}", t=float(i)), key=f"g{i}/start")
    return log.path


@pytest.mark.parametrize("tail", [
    b'{"seq": 3, "time": "x", "type": "run_done", "key": "run/done", "data": {"run_id": "r", "final_main": "m"}}',
    b'{"seq": 3, "time": "x", "ty',
    b"\x00\x00garbage",
], ids=["complete-json-without-its-newline", "cut-mid-line", "binary-junk"])
def test_a_torn_last_line_is_set_aside_and_reported(tmp_path: Path, tail: bytes) -> None:
    path = _journal(tmp_path, 3)
    path.write_bytes(path.read_bytes() + tail)
    log = EventLog(tmp_path)
    assert [r.key for r in log.records] == ["g0/start", "g1/start", "g2/start"]
    assert not log.finished("run/done"), "a line without its newline was never finished"
    assert log.repairs and "torn" in log.repairs[0]
    assert (tmp_path / "events.jsonl.torn-1").read_bytes() == tail
    log.append(RunDone(run_id="r", final_main="m"), key="run/done")
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line) for line in lines), "the next line did not glue onto it"


def test_readers_that_must_not_change_the_journal_do_not(tmp_path: Path) -> None:
    path = _journal(tmp_path, 2)
    torn = path.read_bytes() + b'{"seq": 2'
    path.write_bytes(torn)
    reader = EventLog(tmp_path, repair=False)
    assert reader.torn and not reader.repairs
    rebuild_index(tmp_path)
    assert path.read_bytes() == torn, "building the index never cuts the journal"
    with pytest.raises(JournalError, match="torn"):
        reader.append(RunDone(run_id="r", final_main="m"))


def test_a_bad_line_before_the_end_is_an_error_not_a_silent_cut(tmp_path: Path) -> None:
    path = _journal(tmp_path, 3)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][:20] + lines[2]  # two lines glued, as an old version could leave them
    del lines[2]
    damaged = b"\n".join(lines)
    path.write_bytes(damaged)
    with pytest.raises(JournalError, match=":2: not a journal line"):
        EventLog(tmp_path)
    assert path.read_bytes() == damaged, "nothing was truncated"
