"""Crash-safe writes leave nothing behind: a writer killed mid-write leaves a temp file, the next write of
the same file removes it, and a write still in progress (a live process, another host) is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from meta_agent.fsutil import _HOST, atomic_write_text

KILLED_MID_WRITE = """
import sys, time
from pathlib import Path
from meta_agent.fsutil import atomic_write_lines

def lines():
    yield "first half"
    print("writing", flush=True)
    time.sleep(120)
    yield "never"

atomic_write_lines(Path(sys.argv[1]), lines())
"""


def _temps(path: Path) -> list[str]:
    return sorted(n for n in os.listdir(path.parent) if n.startswith(f".{path.name}.") and n.endswith(".tmp"))


def test_a_write_killed_midway_leaves_a_temp_that_the_next_write_removes(tmp_path: Path) -> None:
    target = tmp_path / "live.json"
    atomic_write_text(target, "before")
    proc = subprocess.Popen([sys.executable, "-c", KILLED_MID_WRITE, str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert target.read_text() == "before\n", "a killed write never shows"
    assert len(_temps(target)) == 1, "the killed writer's temp file is left (what a resumed run used to keep)"
    atomic_write_text(target, "after")
    assert target.read_text() == "after\n" and _temps(target) == []


def test_a_temp_of_a_live_writer_or_of_another_host_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    ours = tmp_path / f".state.json.{_HOST}.{os.getpid()}.abc123.tmp"  # another thread of a live process
    elsewhere = tmp_path / ".state.json.other_host.1.abc123.tmp"  # a node sharing the run folder
    other_file = tmp_path / f".other.json.{_HOST}.999999999.abc123.tmp"  # not this file's
    for p in (ours, elsewhere, other_file):
        p.write_text("in progress")
    atomic_write_text(target, "x")
    assert ours.exists() and elsewhere.exists() and other_file.exists()
