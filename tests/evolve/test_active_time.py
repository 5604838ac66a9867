"""A run killed overnight and resumed in the morning worked for minutes, not for the night: its
generations' wall time (GenerationDone.time, what `bench/efficacy.py` reports as where time went)
counts each process from its start to its last journaled event, not the downtime between them."""

from __future__ import annotations

import json
import time
from pathlib import Path

from meta_agent.eventlog import TIME_FORMAT, EventLog
from meta_agent.evolve.active_time import active_seconds

T0 = 1_790_000_000.0


def _journal(run: Path, events: list[tuple[float, str, dict]]) -> EventLog:
    lines = [json.dumps({"seq": i, "time": time.strftime(TIME_FORMAT, time.localtime(t)), "type": kind,
                         "key": f"k{i}" if kind != "resumed" else None, "data": data})
             for i, (t, kind, data) in enumerate(events)]
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    return EventLog(run)


def _evaluated(seconds: float) -> dict:
    return {"score": 0.5, "eval_seconds": seconds}


def test_downtime_between_a_kill_and_the_resume_is_not_counted(tmp_path: Path) -> None:
    log = _journal(tmp_path, [
        (T0, "generation_started", {"main": "abc", "t": T0}),
        (T0 + 100, "evaluated", _evaluated(90)),
        # killed here; the machine was off for ten hours
        (T0 + 36_000, "resumed", {"t": T0 + 36_000}),
        (T0 + 36_060, "evaluated", _evaluated(55)),
    ])
    assert active_seconds(log, T0, T0 + 36_100) == 200.0  # 100 before the kill, 100 after the resume
    assert active_seconds(log, T0, T0 + 50) == 50.0  # an unfinished window, no resume in it


def test_without_a_resume_the_wall_time_is_the_whole_window(tmp_path: Path) -> None:
    log = _journal(tmp_path, [(T0, "generation_started", {"main": "abc", "t": T0}),
                              (T0 + 30, "evaluated", _evaluated(20))])
    assert active_seconds(log, T0, T0 + 80) == 80.0


def test_only_the_window_asked_for_is_counted(tmp_path: Path) -> None:
    # a resume before the generation began and one after its end change nothing inside it
    log = _journal(tmp_path, [
        (T0 - 500, "resumed", {"t": T0 - 500}),
        (T0, "generation_started", {"main": "abc", "t": T0}),
        (T0 + 40, "evaluated", _evaluated(30)),
        (T0 + 1000, "resumed", {"t": T0 + 1000}),
    ])
    assert active_seconds(log, T0, T0 + 60) == 60.0
