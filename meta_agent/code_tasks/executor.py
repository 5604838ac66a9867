"""Host side of sandboxed test execution: batches programs and tests into few runner calls.

One sandbox session per ProgramExecutor (opened on first use, on a private temp dir that no harness
session ever mounts); each `run` call sends many programs and tests to runner.py at once, because
a sandbox round trip costs more than a test.
"""

from __future__ import annotations

import ast
import json
import shutil
import sys
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from meta_agent.code_tasks.problem import CodeTest
from meta_agent.errors import ContractError
from meta_agent.fsutil import atomic_write_text, readable_by_sandboxes
from meta_agent.sealed import sealed_backend
from meta_agent.untrusted_files import read_bytes
from sandboxes import Limits, Mount, Sandbox, Session

Verdict = Literal["passed", "wrong_answer", "runtime_error", "syntax_error", "timeout", "memory_limit",
                  "process_limit", "output_limit"]
HERE = Path(__file__).resolve().parent
SCRIPTS = ("runner.py", "child.py")
TESTS_PER_CALL = 400
"""Cap on tests per runner call: bounds the call's timeout and what one runner failure costs."""


class ExecutionError(RuntimeError):
    """The runner itself failed (not a program under test): the sandbox could not run the batch."""


class CaseOutcome(BaseModel):
    verdict: Verdict
    detail: str = ""
    seconds: float = 0.0
    value: str | None = Field(None, description="repr of a call's result, for capture jobs only")


class ProgramRun(BaseModel):
    id: str
    outcomes: list[CaseOutcome]

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and all(o.verdict == "passed" for o in self.outcomes)

    def summary(self) -> str:
        """'3/5 passed; wrong_answer x2: <first failure>' — what a reader of an eval file needs."""
        counts = Counter(o.verdict for o in self.outcomes)
        head = f"{counts['passed']}/{len(self.outcomes)} tests passed"
        failed = next((o for o in self.outcomes if o.verdict != "passed"), None)
        if failed is None:
            return head
        kinds = ", ".join(f"{v} x{n}" for v, n in sorted(counts.items()) if v != "passed")
        return f"{head}; {kinds}; first: {failed.detail[:300]}"


@dataclass(frozen=True)
class ProgramJob:
    id: str
    program: str
    tests: list[CodeTest]
    entry_point: str | None = None
    capture: bool = False
    """Call tests return their value instead of being judged (generating tests from a reference)."""
    hash_seed: int = 0
    """PYTHONHASHSEED of the test processes (fixed, so set ordering and verdicts repeat)."""


class ProgramExecutor:
    """Runs programs against tests in one sandbox session; close() (or `with`) ends the session."""

    def __init__(self, backend: str | Sandbox = "auto", *, timeout_s: float = 5.0, memory_mb: int = 1024,
                 workers: int = 2, output_bytes: int = 1_000_000) -> None:
        self._backend = backend
        self.timeout_s, self.memory_mb, self.workers, self.output_bytes = timeout_s, memory_mb, workers, output_bytes
        self._session: Session | None = None
        self._dir: Path | None = None

    @property
    def sandbox(self) -> Sandbox:
        if not isinstance(self._backend, str):
            return self._backend
        self._backend = sealed_backend(self._backend)
        return self._backend

    def _open(self) -> tuple[Session, Path]:
        if self._session is None or self._dir is None:
            # The programs under test write where the runner does; the runner itself sits in a
            # read-only mount beside that workdir, so no program can replace it for the next batch.
            self._dir = Path(tempfile.mkdtemp(prefix="meta-agent-code-exec-"))
            scripts, work = self._dir / "scripts", self._dir / "work"
            scripts.mkdir()
            work.mkdir()
            for name in SCRIPTS:
                shutil.copy2(HERE / name, scripts / name)
            readable_by_sandboxes(self._dir)
            limits = Limits(memory_mb=self.workers * self.memory_mb + 1024, cpus=float(self.workers), pids=512,
                            timeout_s=3600, output_bytes=200_000)
            self._session = self.sandbox.open(work, mounts=[Mount(scripts)], limits=limits)
        return self._session, self._dir

    def run(self, jobs: list[ProgramJob]) -> dict[str, ProgramRun]:
        """Every job's tests, in order; raises ExecutionError when the runner (not a program) fails."""
        out: dict[str, ProgramRun] = {}
        batch: list[ProgramJob] = []
        for job in jobs:
            if batch and sum(len(j.tests) for j in batch) + len(job.tests) > TESTS_PER_CALL:
                out.update(self._call(batch))
                batch = []
            batch.append(job)
        if batch:
            out.update(self._call(batch))
        return out

    def run_values(self, jobs: list[ProgramJob]) -> dict[str, Any]:
        """The value of each job's first call test (None where it failed); for test generation."""
        runs = self.run([ProgramJob(j.id, j.program, j.tests, j.entry_point, True, j.hash_seed) for j in jobs])
        values: dict[str, Any] = {}
        for job_id, run in runs.items():
            raw = run.outcomes[0].value if run.outcomes and run.outcomes[0].verdict == "passed" else None
            try:
                values[job_id] = ast.literal_eval(raw) if raw is not None else None
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                values[job_id] = None
        return values

    def _call(self, jobs: list[ProgramJob]) -> dict[str, ProgramRun]:
        session, root = self._open()
        workdir = root / "work"
        name = uuid.uuid4().hex
        job_file, out_file = workdir / f"job-{name}.json", workdir / f"out-{name}.json"
        n_tests = sum(len(j.tests) for j in jobs)
        atomic_write_text(job_file, json.dumps({
            "programs": [{"id": j.id, "program": j.program, "entry_point": j.entry_point, "capture": j.capture,
                          "hash_seed": j.hash_seed, "tests": [t.wire() for t in j.tests]} for j in jobs],
            "timeout_s": self.timeout_s, "memory_mb": self.memory_mb, "output_bytes": self.output_bytes,
            "workers": self.workers,
        }))
        budget = 30 + n_tests * (self.timeout_s + 6) / self.workers
        runner = root / "scripts" / "runner.py"
        result = session.run([sys.executable, "-E", "-s", str(runner), str(job_file), str(out_file)], timeout=budget)
        job_file.unlink(missing_ok=True)
        try:
            raw = json.loads(read_bytes(out_file)) if result.ok else None
        except (ContractError, ValueError) as e:
            raise ExecutionError(f"the code test runner wrote no readable result for a batch of {len(jobs)} "
                                 f"programs: {e}") from e
        if raw is None:
            raise ExecutionError(f"the code test runner failed on a batch of {len(jobs)} programs "
                                 f"({n_tests} tests) in the {self.sandbox.name} sandbox: {result.describe_failure()}")
        out_file.unlink()
        return {j.id: ProgramRun(id=j.id, outcomes=[CaseOutcome.model_validate(o) for o in raw[j.id]]) for j in jobs}

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> ProgramExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
