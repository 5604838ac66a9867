"""What a build remembers per project: the base run and one line per tested mutant, appended at once.

The log is what makes a killed build resume where it stopped. It lives in a work directory
keyed by everything that changes a mutant's verdict (base commit, deps, pytest arguments
and the grading rule's version), so results judged one way are never reused for another.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from meta_agent.paths import cache_dir
from meta_agent.swe.env import env_requirements

GRADING_VERSION = 3
"""Bump when the way a test run is judged changes. 2: a failed subtest, setup or teardown fails the test;
3: tests run in a venv holding only pytest and the deps, not meta-agent's own interpreter."""

Status = Literal["kept", "survived", "broken", "timeout", "flaky", "invalid"]


class MutantRecord(BaseModel):
    """One line of the per-project mutant log: everything needed to skip or rebuild the mutant later."""

    id: str
    file: str
    operator: str
    line: int
    status: Status
    reason: str = ""
    fail_to_pass: list[str] = Field(default_factory=list)
    pass_to_pass: list[str] = Field(default_factory=list)
    messages: dict[str, str] = Field(default_factory=dict)
    bug_commit: str = ""
    recheck_s: float = 0.0
    """Wall seconds of the re-check alone after it timed out beside other work; 0 when it needed none."""


class BaseRun(BaseModel):
    """The project's suite at the pristine base: which tests pass, how long it takes, what each test executes."""

    passing: list[str]
    wall_time: float
    slowest: float = 0.0
    """The longest a passing test took (seconds): what a re-check allows one test, scaled up."""
    coverage: dict[str, dict[int, list[int]]]
    """source file (relative) -> line -> indices into `passing` of the tests that execute it."""


def work_dir(repo_dir_name: str, base_commit: str, deps: list[str], pytest_args: list[str]) -> Path:
    """The project's work directory for one test environment and grading rule."""
    env = json.dumps({"deps": env_requirements(deps), "pytest_args": pytest_args, "grading": GRADING_VERSION})
    key = f"{base_commit[:12]}-{hashlib.sha256(env.encode()).hexdigest()[:12]}"
    path = cache_dir() / "swe" / "work" / repo_dir_name / key
    path.mkdir(parents=True, exist_ok=True)
    return path


class MutantLog:
    """The append-only log of tested mutants in a work directory (safe to append from worker threads)."""

    def __init__(self, work: Path) -> None:
        self.path = work / "mutants.jsonl"
        self._lock = threading.Lock()

    def load(self) -> dict[str, MutantRecord]:
        records: dict[str, MutantRecord] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = MutantRecord.model_validate_json(line)
                except ValidationError:
                    continue  # a torn last line from a killed build
                records[rec.id] = rec
        return records

    def append(self, rec: MutantRecord) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(rec.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
