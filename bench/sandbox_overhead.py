"""Per-run cost of each available sandbox backend, relative to running the bare process.

For every backend usable here: open one session (warm: the timed runs reuse it), then
time RUNS runs of a trivial Python command in it and RUNS bare runs of the same command,
interleaved one by one so that load from other processes weighs on both alike. Prints
sandbox time / bare time. Targets on the 2-core reference machine: bwrap <= 1.6x,
docker (exec in a warm session) <= 6x. `--check` exits 1 when a target is missed.

Usage: python bench/sandbox_overhead.py [--runs N] [--check]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sandboxes import BACKENDS, Limits, clean_env
from sandboxes.auto import bwrap_availability, docker_availability
from sandboxes.base import Sandbox

COMMAND = [sys.executable, "-c", "pass"]
TARGETS = {"bwrap": 1.6, "docker": 6.0}


def _bare(workdir: Path) -> float:
    start = time.perf_counter()
    subprocess.run(COMMAND, cwd=workdir, env=clean_env(workdir), capture_output=True, check=True)
    return time.perf_counter() - start


def measure(sandbox: Sandbox, workdir: Path, runs: int) -> tuple[float, float]:
    """(bare seconds, sandbox seconds) over `runs` interleaved runs each."""
    bare = boxed = 0.0
    with sandbox.open(workdir, limits=Limits()) as session:
        assert session.run(COMMAND).ok  # warm-up, not timed
        for _ in range(runs):
            bare += _bare(workdir)
            start = time.perf_counter()
            result = session.run(COMMAND)
            boxed += time.perf_counter() - start
            if not result.ok:
                raise SystemExit(f"{sandbox.name}: the trivial command failed: {result.describe_failure()}")
    return bare, boxed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--check", action="store_true", help="exit 1 if a backend misses its target")
    args = parser.parse_args()

    available = {"docker": docker_availability(), "bwrap": bwrap_availability()}
    print(f"{args.runs} runs of `python -c pass` per backend, each interleaved with a bare run")
    print(f"{'backend':8} {'bare':>8} {'sandbox':>9} {'ratio':>7}  target")
    missed = []
    workdir = Path(tempfile.mkdtemp(prefix="meta-agent-bench-", dir="/var/tmp"))
    try:
        for name in ("bwrap", "docker", "process"):
            if name in available and not available[name].usable:
                print(f"{name:8} skipped: {available[name].detail}")
                continue
            sandbox = BACKENDS.get(name)()
            bare, boxed = measure(sandbox, workdir, args.runs)
            ratio = boxed / bare
            target = TARGETS.get(name)
            verdict = "no isolation, for reference" if target is None else f"<= {target}x"
            if target is not None and ratio > target:
                verdict += "  MISSED"
                missed.append(name)
            print(f"{name:8} {bare:7.3f}s {boxed:8.3f}s {ratio:6.2f}x  {verdict}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
