"""Runs pytest inside the sandbox and reports each test's outcome as one JSON line.

This file is copied into the session's scratch dir and run as a script with `python -I -B`,
so it may import only the standard library and pytest: meta-agent itself is not
importable there. Starting isolated (-I) means a `sitecustomize.py` or `pytest.py` in the
checkout cannot hijack the interpreter before pytest is imported; the checkout's import
paths are added only after that. Lines are flushed as tests finish, so a run killed by
its timeout still reports every test that completed. With `stall_timeout` in the spec, a
watchdog ends the run when no test has finished for that long (a hang, not a slow suite).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

MESSAGE_CHARS = 4000


class OutcomeCollector:
    """A pytest plugin object: selection by node id, per-test outcomes, optional per-test line coverage."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.select = set(spec["select"]) if spec.get("select") is not None else None
        self.trace_files = {os.path.normpath(p) for p in spec.get("trace_files") or []}
        self.out = open(spec["report"], "a", encoding="utf-8")  # noqa: SIM115 - closed in finish()
        self.results: dict[str, dict[str, Any]] = {}
        self.lines: dict[str, set[int]] = {}
        self._known: dict[str, str | None] = {}
        self._write = threading.Lock()
        self.current = ""
        self.progress = time.monotonic()
        if spec.get("stall_timeout"):
            threading.Thread(target=self._watch, args=(float(spec["stall_timeout"]),), daemon=True).start()

    def emit(self, record: dict[str, Any]) -> None:
        with self._write:
            self.out.write(json.dumps(record) + "\n")
            self.out.flush()

    def _watch(self, limit: float) -> None:
        """Ends the process when no test has finished for `limit` seconds; says which test it was in."""
        while True:
            time.sleep(0.5)
            if time.monotonic() - self.progress > limit:
                self.emit({"event": "stalled", "nodeid": self.current, "seconds": limit})
                os._exit(124)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.current = nodeid

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        if self.select is None:
            return
        keep = [i for i in items if i.nodeid in self.select]
        dropped = [i for i in items if i.nodeid not in self.select]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.emit({"event": "collect_error", "nodeid": report.nodeid,
                       "message": str(report.longrepr)[-MESSAGE_CHARS:]})

    def _traced(self, filename: str) -> str | None:
        found = self._known.get(filename, "")
        if found == "":
            norm = os.path.normpath(os.path.abspath(filename))
            found = norm if norm in self.trace_files else None
            self._known[filename] = found
        return found

    def _global_trace(self, frame: Any, event: str, arg: Any) -> Any:
        filename = self._traced(frame.f_code.co_filename)
        if filename is None:
            return None
        lines = self.lines.setdefault(filename, set())

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                lines.add(frame.f_lineno)
            return local

        lines.add(frame.f_lineno)
        return local

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        # Plain hook (not a wrapper) returning None: pytest still runs its own protocol after us.
        self.lines = {}
        if self.trace_files:
            sys.settrace(self._global_trace)
        return None

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Fold the test's reports into one outcome: any failed report makes the test fail, whatever follows.

        A unittest `subTest` (or `subtests` fixture) failure arrives as its own report,
        followed by the test's own, often "passed", call report; setup and teardown
        failures come as reports of their own too. Failed beats error beats the call's outcome.
        """
        rec = self.results.setdefault(report.nodeid, {"outcome": "passed", "message": "", "duration": 0.0,
                                                      "call": None, "failed": False, "error": False})
        rec["duration"] += getattr(report, "duration", 0.0) or 0.0
        self.progress = time.monotonic()
        xfail = hasattr(report, "wasxfail")
        subtest = getattr(report, "context", None) is not None
        if report.failed:
            rec["failed" if report.when == "call" or subtest else "error"] = True
            if not rec["message"]:
                crash = getattr(report.longrepr, "reprcrash", None)
                rec["message"] = (crash.message if crash is not None else str(report.longrepr))[-MESSAGE_CHARS:]
        elif report.when == "call" and not subtest:
            if report.passed:
                rec["call"] = "xpassed" if xfail else "passed"
            else:
                rec["call"] = "xfailed" if xfail else "skipped"
        elif report.skipped and report.when == "setup":
            rec["call"] = "xfailed" if xfail else "skipped"
        if report.when == "teardown" and not subtest:
            if self.trace_files:
                sys.settrace(None)
            outcome = "failed" if rec["failed"] else "error" if rec["error"] else rec["call"] or "error"
            record = {"event": "test", "nodeid": report.nodeid, "outcome": outcome, "message": rec["message"],
                      "duration": rec["duration"]}
            if self.trace_files:
                record["lines"] = {f: sorted(v) for f, v in self.lines.items()}
            self.emit(record)

    def finish(self, exit_code: int) -> None:
        self.emit({"event": "done", "exit_code": int(exit_code)})
        self.out.close()


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    # Code that reads stdin (a CLI under test, a mutant that lost its input file) gets EOF, not a hang.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    import pytest  # before the checkout is on sys.path, so the checkout cannot shadow it

    for entry in reversed(spec["python_path"]):
        sys.path.insert(0, os.path.normpath(os.path.join(spec["root"], entry)))
    reporter = OutcomeCollector(spec)
    code: int = 3
    try:
        code = int(pytest.main(spec["args"], plugins=[reporter]))
    finally:
        reporter.finish(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
