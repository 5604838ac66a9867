"""Run chosen pytest node ids for a checkout inside a sandbox session and read back per-test outcomes.

Outcomes come from a small plugin (`pytest_runner.py`) that writes one JSON line per
finished test into the session's scratch dir, not from parsing pytest's console output,
so odd test ids, captured output or a killed run cannot confuse the result.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from meta_agent import inside
from meta_agent.errors import ContractError
from meta_agent.fsutil import atomic_write_text
from meta_agent.swe.env import env_python
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import TestSetup
from meta_agent.untrusted_files import read_bytes
from sandboxes import Session

RUNNER = inside.path("pytest_runner.py")
PASSED = "passed"
FAILING = frozenset({"failed", "error"})
BASE_PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-o", "addopts=", "-o", "console_output_style=classic",
                    "--tb=no", "--color=no"]
"""Project addopts (coverage, doctests, xdist) are dropped so build and evaluation run the same way.
Tracebacks are not printed (`--tb=no`): outcomes and crash lines come from the plugin, and
formatting hundreds of failure tracebacks can take ten times longer than the tests."""


@dataclass
class TestOutcome:
    __test__ = False

    outcome: str
    """passed | failed | error | skipped | xfailed | xpassed"""
    message: str = ""
    """The crash message pytest reports (assertion text or exception line); empty when it passed."""
    duration: float = 0.0


@dataclass
class TestReport:
    """What one pytest run said about each test it ran."""

    __test__ = False

    tests: dict[str, TestOutcome] = field(default_factory=dict)
    collect_errors: dict[str, str] = field(default_factory=dict)
    exit_code: int | None = None
    """pytest's exit code; None when the run never finished (timeout, crash, killed)."""
    timed_out: bool = False
    stalled: str = ""
    """The test that ran past the run's stall timeout (the run was ended there); empty otherwise."""
    wall_time: float = 0.0
    coverage: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    """node id -> {absolute source file: executed lines}; only filled when tracing was asked for."""
    output_tail: str = ""

    @property
    def finished(self) -> bool:
        return self.exit_code is not None and not self.timed_out

    def outcome(self, nodeid: str) -> str:
        """The test's outcome, `timeout` if the run was killed before it finished, else `missing`."""
        if nodeid in self.tests:
            return self.tests[nodeid].outcome
        return "timeout" if self.timed_out else "missing"

    def passed(self) -> set[str]:
        return {k for k, v in self.tests.items() if v.outcome == PASSED}

    def failing(self) -> set[str]:
        return {k for k, v in self.tests.items() if v.outcome in FAILING}

    def disagreement(self) -> str:
        """Why pytest's exit status contradicts the per-test outcomes; empty when they agree.

        Only a finished run is checked (a killed one has no exit status). Exit 0 means no test
        failed; exit 1 means at least one did; 3 (internal error) and 4 (usage error, e.g. a bad
        pytest argument) mean the outcomes cannot be trusted at all.
        """
        if not self.finished:
            return ""
        failing = sorted(self.failing())
        code = self.exit_code
        if code == 0 and (failing or self.collect_errors):
            bad = failing or sorted(self.collect_errors)
            return f"pytest exited 0 (all passed) but reported {len(bad)} failing: {', '.join(bad[:3])}"
        if code == 1 and not failing:
            return (f"pytest exited 1 (tests failed) but every one of the {len(self.tests)} tests it reported "
                    "passed or was skipped")
        if code in (3, 4):
            what = "an internal error" if code == 3 else "a usage error (check the pytest arguments)"
            return f"pytest stopped with {what} (exit {code}): {self.output_tail[-500:]}"
        return ""


class GradingError(SweTaskError):
    """pytest's exit status disagrees with its per-test outcomes: no verdict may be drawn from the run."""

    def __init__(self, message: str, report: TestReport) -> None:
        super().__init__(message)
        self.report = report


def test_file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


SANDBOX_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PY_COLORS": "0"}
"""Plugins installed beside pytest on the host must not change what a run means."""


def run_env(root: Path, setup: TestSetup) -> dict[str, str]:
    """The environment of a test run: the checkout's import paths on PYTHONPATH.

    The runner itself starts isolated (-I ignores PYTHONPATH) and sets its sys.path by hand;
    PYTHONPATH is for what the tests start: `python -m pkg` in a subprocess must import the
    project as it would from a venv where it is installed (the deps are in the venv itself).
    """
    paths = [os.path.normpath(root / p) for p in setup.python_path]
    return {**SANDBOX_ENV, "PYTHONPATH": os.pathsep.join(paths)}


def run_tests(
    session: Session,
    root: Path,
    setup: TestSetup,
    *,
    select: Iterable[str] | None = None,
    files: Iterable[str] | None = None,
    timeout: float,
    env: Path,
    trace_files: Iterable[Path] = (),
    stall_timeout: float | None = None,
) -> TestReport:
    """Run pytest on `root` in `session`: the `select`ed node ids (their files only), or all of `files`.

    Raises GradingError when pytest's exit status contradicts the per-test outcomes.
    With `trace_files`, records which lines of those files each test executed (for choosing
    the tests that can see a mutation). `env` is the project's test venv (`env.project_env`,
    mounted in the session): its python runs the tests.
    `stall_timeout` ends the run (as timed out) once no test has finished for that many seconds.
    """
    selected = sorted(set(select)) if select is not None else None
    targets = sorted({test_file_of(n) for n in selected}) if selected is not None else sorted(set(files or []))
    if selected is not None and not selected:
        return TestReport(exit_code=5)
    token = uuid.uuid4().hex[:12]
    scratch = session.scratch
    # The scratch dir is the sandbox's to write: a project's tests (or a patch under evaluation) could have
    # replaced the runner or planted links. Nothing of an earlier run is alive now, so the runner and the
    # spec are written afresh by create-then-rename (a planted link is replaced, never followed), and the
    # report is read as plain data.
    runner = scratch / "meta_agent_swe_runner.py"
    atomic_write_text(runner, RUNNER.read_text(encoding="utf-8"))
    report_path = scratch / f"swe-report-{token}.jsonl"
    spec_path = scratch / f"swe-spec-{token}.json"
    args = [*BASE_PYTEST_ARGS, f"--rootdir={root}", *setup.pytest_args]
    args += ["--", *targets]
    spec = {"root": str(root), "python_path": setup.python_path, "args": args, "select": selected,
            "report": str(report_path), "trace_files": [str(p) for p in trace_files],
            "stall_timeout": stall_timeout}
    atomic_write_text(spec_path, json.dumps(spec))
    try:
        result = session.run([str(env_python(env)), "-I", "-B", str(runner), str(spec_path)], timeout=timeout,
                             cwd=root, env=run_env(root, setup))
        report = parse_report(report_path)
    finally:
        spec_path.unlink(missing_ok=True)
        report_path.unlink(missing_ok=True)
    report.timed_out = result.timed_out or bool(report.stalled)
    report.wall_time = result.wall_time
    report.output_tail = "\n".join((result.stdout + "\n" + result.stderr).strip().splitlines()[-40:])
    problem = report.disagreement()
    if problem:
        raise GradingError(f"refusing to grade this pytest run: {problem}", report)
    return report


def parse_report(path: Path) -> TestReport:
    """Read the runner's JSON lines; a torn last line (the run was killed mid-write) is ignored."""
    report = TestReport()
    try:
        text = read_bytes(path).decode("utf-8", errors="replace")
    except ContractError:
        return report  # missing, or not a plain file: no outcome is taken from it
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        event = rec.get("event")
        if event == "test":
            report.tests[rec["nodeid"]] = TestOutcome(rec["outcome"], rec.get("message", ""), rec.get("duration", 0))
            if "lines" in rec:
                report.coverage[rec["nodeid"]] = rec["lines"]
        elif event == "collect_error":
            report.collect_errors[rec["nodeid"]] = rec.get("message", "")
        elif event == "stalled":
            report.stalled = rec.get("nodeid") or "(collection)"
        elif event == "done":
            report.exit_code = int(rec["exit_code"])
    return report
