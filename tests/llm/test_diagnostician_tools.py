"""The diagnostician's read-only tools run on the trusted side: a hostile pattern must not hang the run."""

from __future__ import annotations

import time
from pathlib import Path

from meta_agent.agents.diagnostician import GREP_SECONDS, EvidenceGrepArgs, HarnessReader, PathArgs


def _reader(tmp_path: Path) -> HarnessReader:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "rewards.py").write_text("def correctness(r):\n    return 1.0\n" + "a" * 3000 + "!\n")
    return HarnessReader(tmp_path)


def test_a_catastrophic_pattern_is_stopped_at_the_deadline(tmp_path: Path) -> None:
    reader = _reader(tmp_path)
    started = time.monotonic()
    result = reader._grep(EvidenceGrepArgs(pattern=r"(\w+\s?)+$"))  # exponential backtracking on the long line
    # Unstopped, this backtracking would run for longer than the universe's age; the bound is loose so that a
    # loaded CI machine (a test failed at 14.8 s against 10 s beside two other suites) does not fail it.
    assert time.monotonic() - started < GREP_SECONDS * 20
    assert not result.ok and "was stopped" in result.text


def test_grep_still_finds_lines_and_refuses_bad_patterns_and_outside_paths(tmp_path: Path) -> None:
    reader = _reader(tmp_path)
    assert reader._grep(EvidenceGrepArgs(pattern=r"def \w+")).text == "harness/rewards.py:1: def correctness(r):"
    assert not reader._grep(EvidenceGrepArgs(pattern="(unclosed")).ok
    assert not reader._read(PathArgs(path="../../etc/passwd")).ok
