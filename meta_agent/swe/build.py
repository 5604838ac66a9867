"""The task-building pipeline: project -> base commit -> passing tests -> mutants -> validated instances.

Per project: commit the source tree as a pristine base, run its suite once with per-test
line tracing (which tests execute which lines), then for each mutant in a seeded order
run only the test files holding tests that execute the mutated lines (mutants no test
executes are never run). A mutant that makes some of them fail while the suite still
imports is committed on its own branch, and kept only if the sealed evaluator agrees that
everything passes with the gold patch (the FAIL_TO_PASS tests were seen failing on that
exact tree). Every mutant's result is
appended to a log as soon as it is known, so a killed build resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock
from pydantic import BaseModel, Field, ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from meta_agent.paths import cache_dir
from meta_agent.swe.env import deps_dir, deps_mounts, require_pytest
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import MutationInfo, SweInstance, TestSetup
from meta_agent.swe.layout import is_source_path, is_test_module, python_path
from meta_agent.swe.mutate import Mutation, find_mutations, is_effective, order_mutations
from meta_agent.swe.project import BUG_BRANCH_PREFIX, ProjectRepo
from meta_agent.swe.sources import Source, prepare_repo
from meta_agent.swe.statement import changed_lines, quotes_patch, write_problem_statement
from meta_agent.swe.testrun import TestReport, run_tests, test_file_of
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Limits, Sandbox, Session, get_backend

BUILD_LIMITS = Limits(memory_mb=4096, cpus=1.0, pids=256)
MESSAGES_KEPT = 5
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


class BaseRun(BaseModel):
    """The project's suite at the pristine base: which tests pass, how long it takes, what each test executes."""

    passing: list[str]
    wall_time: float
    coverage: dict[str, dict[int, list[int]]]
    """source file (relative) -> line -> indices into `passing` of the tests that execute it."""


@dataclass
class ProjectResult:
    repo: str
    instances: list[SweInstance] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


class _Slots:
    """Worker checkouts of the base tree, each with its own sandbox session; a mutant borrows one at a time."""

    def __init__(self, repo: ProjectRepo, base: str, sandbox: Sandbox, count: int, deps: Path | None,
                 stack: ExitStack) -> None:
        self._free: queue.Queue[tuple[Path, Session]] = queue.Queue()
        self.tmp = Path(tempfile.mkdtemp(prefix="meta-agent-swe-build-")).resolve()
        stack.callback(shutil.rmtree, self.tmp, True)
        for i in range(count):
            root = repo.export(base, self.tmp / f"slot{i}")
            session = stack.enter_context(sandbox.open(root, mounts=deps_mounts(deps), limits=BUILD_LIMITS))
            self._free.put((root, session))

    @contextmanager
    def borrow(self) -> Iterator[tuple[Path, Session]]:
        slot = self._free.get()
        try:
            yield slot
        finally:
            self._free.put(slot)


class ProjectBuilder:
    """Builds the instances of one project; see the module docstring for the steps."""

    def __init__(self, source: Source, sandbox: Sandbox, *, max_instances: int, seed: int, workers: int,
                 deps: list[str], console: Console, progress: bool) -> None:
        self.source = source
        self.sandbox = sandbox
        self.max_instances = max_instances
        self.seed = seed
        self.workers = max(1, workers)
        self.console = console
        self.progress = progress
        self.repo, self.repo_name, self.version = prepare_repo(source)
        self.base = self.repo.base_commit
        root = self.repo.path
        self.setup = TestSetup(python_path=python_path(self.repo.files(self.base)), deps=deps)
        key = f"{self.base[:12]}-{'-'.join(sorted(deps)) or 'nodeps'}"
        self.work = cache_dir() / "swe" / "work" / root.name / key.replace("/", "_")[:120]
        self.work.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work / "mutants.jsonl"
        self._log_lock = threading.Lock()
        self.deps = deps_dir(deps)

    # -- base run -------------------------------------------------------------------------------------------
    def base_run(self, slots: _Slots) -> BaseRun:
        cached = self.work / "base.json"
        if cached.is_file():
            return BaseRun.model_validate_json(cached.read_text())
        files = self.repo.files(self.base)
        test_files = [f for f in files if is_test_module(f)]
        sources = [f for f in files if is_source_path(f)]
        with slots.borrow() as (root, session):
            traced = run_tests(session, root, self.setup, files=test_files, timeout=1800,
                               trace_files=[root / f for f in sources], deps_dir=self.deps)
            plain = run_tests(session, root, self.setup, files=test_files, timeout=1800, deps_dir=self.deps)
        passing = sorted(traced.passed() & plain.passed())
        if not passing:
            raise SweTaskError(
                f"{self.repo_name}: no test passes at the base commit, so no task can be built. pytest said:\n"
                f"{plain.output_tail[-1500:]}\nIf tests need packages besides pytest, pass them with --deps."
            )
        index = {t: i for i, t in enumerate(passing)}
        coverage: dict[str, dict[int, list[int]]] = {}
        for test, per_file in traced.coverage.items():
            if test not in index:
                continue
            for abs_file, lines in per_file.items():
                rel = Path(abs_file).relative_to(root).as_posix()
                by_line = coverage.setdefault(rel, {})
                for line in lines:
                    by_line.setdefault(line, []).append(index[test])
        run = BaseRun(passing=passing, wall_time=plain.wall_time, coverage=coverage)
        cached.write_text(run.model_dump_json())
        return run

    # -- mutants --------------------------------------------------------------------------------------------
    def candidates(self, base: BaseRun) -> list[Mutation]:
        found: list[Mutation] = []
        for rel in sorted(base.coverage):
            lines = base.coverage[rel]
            try:
                source = self.repo.read(self.base, rel)
            except UnicodeDecodeError:
                continue  # not UTF-8: the text edits could not round-trip it
            found += [m for m in find_mutations(source, rel)
                      if any(line in lines for line in range(m.line, m.end_line + 1))]
        return order_mutations(found, self.seed)

    def covering(self, base: BaseRun, m: Mutation) -> list[str]:
        lines = base.coverage.get(m.file, {})
        tests = {i for line in range(m.line, m.end_line + 1) for i in lines.get(line, [])}
        return [base.passing[i] for i in sorted(tests)]

    def load_log(self) -> dict[str, MutantRecord]:
        records: dict[str, MutantRecord] = {}
        if self.log_path.is_file():
            for line in self.log_path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = MutantRecord.model_validate_json(line)
                except ValidationError:
                    continue  # a torn last line from a killed build
                records[rec.id] = rec
        return records

    def append_log(self, rec: MutantRecord) -> None:
        with self._log_lock, self.log_path.open("a", encoding="utf-8") as f:
            f.write(rec.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _record(self, m: Mutation, status: Status, reason: str = "", **kw: Any) -> MutantRecord:
        return MutantRecord(id=m.id, file=m.file, operator=m.operator, line=m.line, status=status, reason=reason,
                            **kw)

    def test_mutant(self, base: BaseRun, m: Mutation, slots: _Slots) -> MutantRecord:
        """Run the test files that execute the mutated lines on a worker checkout holding the mutant.

        Only tests that execute a mutated line can see the bug, so the files holding them are
        the whole judge: their failing tests are FAIL_TO_PASS, the rest PASS_TO_PASS.
        """
        original = self.repo.read(self.base, m.file)
        mutated = m.apply(original)
        if not is_effective(original, mutated):
            return self._record(m, "broken", "mutant does not parse or equals the original")
        files = {test_file_of(t) for t in self.covering(base, m)}
        judged = [t for t in base.passing if test_file_of(t) in files]
        with slots.borrow() as (root, session):
            target = root / m.file
            target.write_text(mutated, encoding="utf-8")
            try:
                report = run_tests(session, root, self.setup, select=judged, timeout=self.mutant_timeout(base),
                                   deps_dir=self.deps)
            finally:
                target.write_text(original, encoding="utf-8")
        status = self._problem(report)
        if status:
            return self._record(m, status[0], status[1])
        f2p = sorted(t for t in judged if report.outcome(t) in ("failed", "error"))
        p2p = sorted(t for t in judged if report.outcome(t) == "passed")
        if not f2p:
            return self._record(m, "survived")
        if len(f2p) + len(p2p) != len(judged):
            return self._record(m, "flaky", "some tests were skipped or went missing under the mutant")
        messages = {t: report.tests[t].message for t in f2p[:MESSAGES_KEPT]}
        return self._record(m, "kept", fail_to_pass=f2p, pass_to_pass=p2p, messages=messages)

    @staticmethod
    def mutant_timeout(base: BaseRun) -> float:
        """Tight, since mutants that loop forever are common and each costs this much; a miss only drops one."""
        return 5.0 + 2.0 * base.wall_time

    @staticmethod
    def _problem(report: TestReport) -> tuple[Status, str] | None:
        if report.timed_out:
            return "timeout", "the tests did not finish in time (endless loop?)"
        if report.collect_errors:
            return "broken", "the test suite no longer imports"
        if not report.finished:
            return "broken", f"pytest did not finish: {report.output_tail[-300:]}"
        return None

    # -- instances ------------------------------------------------------------------------------------------
    def instance_id(self, rec: MutantRecord) -> str:
        return f"{self.repo.path.name}.{rec.id}"

    def make_instance(self, rec: MutantRecord, m: Mutation, base: BaseRun) -> SweInstance:
        """The instance of a kept mutant; its bug commit is made unless the record already names it."""
        bug = rec.bug_commit
        if not bug or not self.repo.has_commit(bug):
            original = self.repo.read(self.base, m.file)
            bug = self.repo.commit_file(self.base, m.file, m.apply(original), f"Inject bug {m.id}",
                                        f"{BUG_BRANCH_PREFIX}{m.id}")
        patch = self.repo.diff(bug, self.base)
        project = self.repo_name.split("/", 1)[1]
        statement = write_problem_statement(project, rec.fail_to_pass, rec.messages,
                                            forbidden=changed_lines(patch))
        instance = SweInstance(
            instance_id=self.instance_id(rec), repo=self.repo_name, base_commit=bug, patch=patch,
            problem_statement=statement, FAIL_TO_PASS=rec.fail_to_pass, PASS_TO_PASS=rec.pass_to_pass,
            version=self.version, environment_setup_commit=self.base,
            setup=self.setup.model_copy(update={"timeout_s": round(30.0 + 3.0 * base.wall_time, 1)}),
            mutation=MutationInfo(operator=m.operator, file=m.file, line=m.line),
        )
        return instance

    def validate(self, instance: SweInstance, mutated: str, m: Mutation) -> str:
        """Empty if the instance holds up; else why not.

        Fail-before was seen in the sandbox run of the mutant; the bug commit must hold exactly
        that tree. Pass-after is checked through the sealed evaluator itself, on a fresh
        checkout of the bug commit with the gold patch applied.
        """
        if self.repo.read(instance.base_commit, m.file) != mutated:
            return "the bug commit does not hold the tested mutant"
        if quotes_patch(instance.problem_statement, instance.patch):
            return "problem statement quotes the patch"
        after = evaluate_patch(instance, instance.patch, self.sandbox)
        if not after.resolved:
            failed = [t for t, o in after.tests.items() if o != "passed"][:3]
            return f"gold patch does not resolve it ({after.detail or failed})"
        return ""

    def process(self, base: BaseRun, m: Mutation, slots: _Slots) -> MutantRecord:
        rec = self.test_mutant(base, m, slots)
        if rec.status != "kept":
            return rec
        instance = self.make_instance(rec, m, base)
        problem = self.validate(instance, m.apply(self.repo.read(self.base, m.file)), m)
        if problem:
            self.repo.delete_branch(f"{BUG_BRANCH_PREFIX}{m.id}")
            return rec.model_copy(update={"status": "invalid", "reason": problem[:2000]})
        return rec.model_copy(update={"bug_commit": instance.base_commit})

    def run(self) -> ProjectResult:
        result = ProjectResult(self.repo_name)
        with ExitStack() as stack:
            stack.enter_context(FileLock(str(self.work / "build.lock")))
            slots = _Slots(self.repo, self.base, self.sandbox, self.workers, self.deps, stack)
            base = self.base_run(slots)
            order = self.candidates(base)
            records = self.load_log()
            self._drive(base, order, records, slots)
        kept = self._kept_prefix(order, records)
        by_id = {m.id: m for m in order}
        for rec in kept:
            result.instances.append(self.make_instance(rec, by_id[rec.id], base))
        for rec in records.values():
            result.counts[rec.status] = result.counts.get(rec.status, 0) + 1
        return result

    def _kept_prefix(self, order: list[Mutation], records: dict[str, MutantRecord]) -> list[MutantRecord]:
        """The first max_instances kept mutants in seed order, counting only an unbroken prefix of results."""
        kept: list[MutantRecord] = []
        for m in order:
            rec = records.get(m.id)
            if rec is None or len(kept) >= self.max_instances:
                break
            if rec.status == "kept":
                kept.append(rec)
        return kept

    def _drive(self, base: BaseRun, order: list[Mutation], records: dict[str, MutantRecord], slots: _Slots) -> None:
        """Test mutants in order, `workers` at a time, until the kept prefix is full or none are left."""
        todo = iter(m for m in order if m.id not in records)
        progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=self.console,
                            disable=not self.progress, transient=False)
        with progress, ThreadPoolExecutor(self.workers, thread_name_prefix="swe-mutant") as pool:
            task = progress.add_task(self.repo_name, total=min(self.max_instances, len(order)), note="")
            running: dict[Future[MutantRecord], Mutation] = {}

            def refresh() -> None:
                kept = len(self._kept_prefix(order, records))
                tested = sum(1 for m in order if m.id in records)
                progress.update(task, completed=kept, note=f"{tested} mutants tested")

            refresh()
            while True:
                while len(running) < self.workers and len(self._kept_prefix(order, records)) < self.max_instances:
                    m = next(todo, None)
                    if m is None:
                        break
                    running[pool.submit(self.process, base, m, slots)] = m
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    running.pop(fut)
                    rec = fut.result()
                    records[rec.id] = rec
                    self.append_log(rec)
                refresh()


def build_tasks(
    sources: list[Source],
    *,
    sandbox: Sandbox | str = "auto",
    max_per_project: int = 100,
    seed: int = 0,
    workers: int = 2,
    deps: list[str] | None = None,
    console: Console | None = None,
    progress: bool = True,
) -> list[SweInstance]:
    """Build validated instances from every source (splits are not assigned here)."""
    require_pytest()
    backend = get_backend(sandbox) if isinstance(sandbox, str) else sandbox
    console = console or Console(stderr=True)
    instances: list[SweInstance] = []
    for source in sources:
        builder = ProjectBuilder(source, backend, max_instances=max_per_project, seed=seed, workers=workers,
                                 deps=list(deps or []), console=console, progress=progress)
        result = builder.run()
        console.print(f"{result.repo}: {len(result.instances)} instances "
                      f"({json.dumps(dict(sorted(result.counts.items())))} over all mutants tested so far)")
        instances += result.instances
    return instances
