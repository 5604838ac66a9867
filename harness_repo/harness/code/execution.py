"""Runs a rollout's program against its task's visible tests; rewards and diagnostics share the result.

One runner process (harness/code/runner.py) per completion executes all its tests; this harness
already runs inside meta-agent's sandbox, which bounds what the runner can reach. Results are
memoised per (program, tests), so the reward and every diagnostic of a rollout cost one run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness.code.extract import extract_program
from harness.code.spec import TaskSpec, task_spec
from harness.rollout import Rollout

RUNNER = Path(__file__).resolve().with_name("runner.py")
TEST_TIMEOUT_S = 2.0
MEMORY_MB = 1024
OUTPUT_BYTES = 1_000_000
FAILURES = ("runtime_error", "memory_limit", "process_limit", "output_limit")
"""Verdicts that mean the program crashed (the diagnostics label them runtime_error)."""


@dataclass(frozen=True)
class TestResult:
    verdict: str
    """passed | wrong_answer | runtime_error | syntax_error | timeout | memory_limit | process_limit | output_limit"""
    detail: str = ""


@dataclass(frozen=True)
class Execution:
    program: str | None
    """None: the completion has no code block."""
    results: tuple[TestResult, ...]

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.verdict == "passed")

    @property
    def pass_rate(self) -> float:
        return self.passed / len(self.results) if self.results else 0.0

    def any(self, *verdicts: str) -> bool:
        return any(r.verdict in verdicts for r in self.results)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_tests(program: str, spec: TaskSpec, timeout_s: float | None = None) -> tuple[TestResult, ...]:
    """Every test of `spec` on `program`; tests the runner never reported (it died or hung) are failures."""
    timeout_s = timeout_s or TEST_TIMEOUT_S
    job = {"program": program, "tests": list(spec.tests), "entry_point": spec.entry_point, "timeout_s": timeout_s,
           "memory_mb": MEMORY_MB, "output_bytes": OUTPUT_BYTES}
    budget = 2 + len(spec.tests) * (timeout_s + 0.5)
    proc = subprocess.Popen([sys.executable, "-I", str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, text=True)
    try:
        out, err = proc.communicate(json.dumps(job), timeout=budget)
        died = f"the test runner died (exit {proc.returncode}): {err.strip()[-300:]}"
        missing = TestResult("runtime_error", died)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        missing = TestResult("timeout", f"the program could not be interrupted within {budget:g}s")
    finally:
        _kill_group(proc.pid)  # whatever the program left running
    results = [missing] * len(spec.tests)
    for line in out.splitlines():
        try:
            rec = json.loads(line)
            results[rec["i"]] = TestResult(rec["verdict"], rec.get("detail", ""))
        except (ValueError, KeyError, IndexError, TypeError):
            continue
    return tuple(results)


@lru_cache(maxsize=4096)
def _execute(completion: str, spec_key: str) -> Execution:
    io_mode, entry, prelude, tests = json.loads(spec_key)
    spec = TaskSpec(io=io_mode, entry_point=entry, prelude=prelude, tests=tuple(tests))
    program = extract_program(completion, spec)
    if program is None:
        return Execution(program=None, results=())
    return Execution(program=program, results=run_tests(program, spec) if spec.tests else ())


def execute(r: Rollout) -> Execution:
    return _execute(r.completion, task_spec(r.task).key())
