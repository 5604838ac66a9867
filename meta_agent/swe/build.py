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
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock
from rich.console import Console

from meta_agent.fsutil import atomic_write_text
from meta_agent.progress import progress_bar
from meta_agent.sealed import sealed_backend
from meta_agent.swe.build_limits import instance_timeout, mutant_timeout, recheck_timeout, stall_timeout
from meta_agent.swe.defaults import DEFAULT_MAX_PER_PROJECT
from meta_agent.swe.difficulty import bug_site, likely_easy, names_function, site_finder
from meta_agent.swe.env import project_env
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import MutationInfo, SweInstance, TestSetup, plain_requirement
from meta_agent.swe.layout import is_source_path, is_test_module, python_path
from meta_agent.swe.mutant_log import BaseRun, MutantLog, MutantRecord, Status, work_dir
from meta_agent.swe.mutate import Mutation, find_mutations, is_effective, order_mutations
from meta_agent.swe.project import BUG_BRANCH_PREFIX
from meta_agent.swe.slots import Slots
from meta_agent.swe.sources import Source, fetch_sources, prepare_repo
from meta_agent.swe.statement import changed_lines, quotes_patch, write_problem_statement
from meta_agent.swe.testrun import GradingError, TestReport, run_tests, test_file_of
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Sandbox, Session

MESSAGES_KEPT = 5


@dataclass
class ProjectResult:
    repo: str
    instances: list[SweInstance] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    rechecked: int = 0
    """Mutants that timed out beside other work and were run again alone."""
    recheck_s: float = 0.0


class ProjectBuilder:
    """Builds the instances of one project; see the module docstring for the steps.

    Constructing one prepares the repository and checks that the project has tests at all,
    so every source of a build is checked before any of them is built.
    """

    def __init__(self, source: Source, sandbox: Sandbox, *, max_instances: int, seed: int, workers: int,
                 deps: list[str], pytest_args: list[str], console: Console, progress: bool) -> None:
        self.source = source
        self.sandbox = sandbox
        self.max_instances = max_instances
        self.seed = seed
        self.workers = max(1, workers)
        self.console = console
        self.progress = progress
        self.repo, self.repo_name, self.version = prepare_repo(source, sandbox)
        self.base = self.repo.base_commit
        files = self.repo.files(self.base)
        if not any(is_test_module(f) for f in files):
            where = "its sdist" if source.kind == "pypi" else f"{source.spec} at {self.base[:12]}"
            raise SweTaskError(
                f"{self.repo_name}: {where} has no test files (test_*.py or *_test.py), so no task can be built "
                "from it. Many sdists leave the tests out: clone the project's repository and build with "
                "--from-git PATH instead."
            )
        self.setup = TestSetup(python_path=python_path(files), deps=deps, pytest_args=pytest_args)
        self.work = work_dir(self.repo.path.name, self.base, deps, pytest_args)
        self.log = MutantLog(self.work)
        self.env = Path()
        """The test venv (pytest + deps), made when the build starts."""

    # -- base run -------------------------------------------------------------------------------------------
    def base_run(self, slots: Slots) -> BaseRun:
        cached = self.work / "base.json"
        if cached.is_file():
            try:
                return BaseRun.model_validate_json(cached.read_text())
            except ValueError:  # an older version's file, or one a kill cut: measure again
                cached.unlink()
        files = self.repo.files(self.base)
        test_files = [f for f in files if is_test_module(f)]
        sources = [f for f in files if is_source_path(f)]
        try:
            with slots.borrow() as (root, session):
                traced = run_tests(session, root, self.setup, files=test_files, timeout=1800,
                                   trace_files=[root / f for f in sources], env=self.env)
                plain = run_tests(session, root, self.setup, files=test_files, timeout=1800, env=self.env)
        except GradingError as e:
            raise SweTaskError(f"{self.repo_name}: running the suite at the base commit: {e}") from e
        passing = sorted(traced.passed() & plain.passed())
        if not passing:
            tail = "\n".join([*(f"{k}: {v[-600:]}" for k, v in list(plain.collect_errors.items())[:2]),
                              plain.output_tail[-800:]])
            hint = ("If tests need packages besides pytest, pass them with --deps NAME."
                    if "ModuleNotFoundError" in tail or "ImportError" in tail
                    else "If pytest needs options to run this suite, pass them with --pytest-arg ARG.")
            raise SweTaskError(f"{self.repo_name}: no test passes at the base commit, so no task can be built. "
                               f"pytest said:\n{tail}\n{hint}")
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
        slowest = max(plain.tests[t].duration for t in passing)
        run = BaseRun(passing=passing, wall_time=plain.wall_time, slowest=slowest, coverage=coverage)
        atomic_write_text(cached, run.model_dump_json())
        return run

    # -- mutants --------------------------------------------------------------------------------------------
    def candidates(self, base: BaseRun) -> list[Mutation]:
        """Mutants on lines some passing test executes, in the order they are tried: those that would make an
        easy-tier instance if a test named by their function fails (`likely_easy`) first, then the rest, each
        part in the seeded order that spreads it over files and operators. A small policy learns from the
        easy tier, and a capped build would otherwise hold few of it (13 of 452 in the set built before)."""
        found: list[Mutation] = []
        easy: set[str] = set()
        for rel in sorted(base.coverage):
            lines = base.coverage[rel]
            try:
                source = self.repo.read(self.base, rel)
            except UnicodeDecodeError:
                continue  # not UTF-8: the text edits could not round-trip it
            site = site_finder(source)
            for m in find_mutations(source, rel):
                if any(line in lines for line in range(m.line, m.end_line + 1)):
                    found.append(m)
                    if likely_easy(m.operator, site(m.line), self.covering(base, m)):
                        easy.add(m.id)
        ordered = order_mutations(found, self.seed)
        return [m for m in ordered if m.id in easy] + [m for m in ordered if m.id not in easy]

    def covering(self, base: BaseRun, m: Mutation) -> list[str]:
        lines = base.coverage.get(m.file, {})
        tests = {i for line in range(m.line, m.end_line + 1) for i in lines.get(line, [])}
        return [base.passing[i] for i in sorted(tests)]

    def _record(self, m: Mutation, status: Status, reason: str = "", **kw: Any) -> MutantRecord:
        return MutantRecord(id=m.id, file=m.file, operator=m.operator, line=m.line, status=status, reason=reason,
                            **kw)

    def _run_mutant(self, slot: tuple[Path, Session], m: Mutation, original: str, mutated: str,
                    judged: list[str], timeout: float, stall_timeout: float | None = None) -> TestReport:
        root, session = slot
        target = root / m.file
        target.write_text(mutated, encoding="utf-8")
        try:
            return run_tests(session, root, self.setup, select=judged, timeout=timeout, env=self.env,
                             stall_timeout=stall_timeout)
        finally:
            target.write_text(original, encoding="utf-8")

    def test_mutant(self, base: BaseRun, m: Mutation, slots: Slots) -> MutantRecord:
        """Run the test files that execute the mutated lines on a worker checkout holding the mutant.

        Only tests that execute a mutated line can see the bug, so the files holding them are
        the whole judge: their failing tests are FAIL_TO_PASS, the rest PASS_TO_PASS. A run
        that times out beside other work is run again alone with much larger limits, so the
        verdict does not depend on how busy the machine was.
        """
        original = self.repo.read(self.base, m.file)
        mutated = m.apply(original)
        if not is_effective(original, mutated):
            return self._record(m, "broken", "mutant does not parse or equals the original")
        files = {test_file_of(t) for t in self.covering(base, m)}
        judged = [t for t in base.passing if test_file_of(t) in files]
        try:
            with slots.borrow() as slot:
                report = self._run_mutant(slot, m, original, mutated, judged, mutant_timeout(base))
            recheck_s = 0.0
            if report.timed_out:
                with slots.borrow_alone() as slot:
                    report = self._run_mutant(slot, m, original, mutated, judged, recheck_timeout(base),
                                              stall_timeout=stall_timeout(base))
                recheck_s = round(report.wall_time, 1)
        except GradingError as e:
            return self._record(m, "broken", str(e)[:2000])
        status = self._problem(report)
        if status:
            return self._record(m, status[0], status[1], recheck_s=recheck_s)
        f2p = sorted(t for t in judged if report.outcome(t) in ("failed", "error"))
        p2p = sorted(t for t in judged if report.outcome(t) == "passed")
        if not f2p:
            return self._record(m, "survived", recheck_s=recheck_s)
        if len(f2p) + len(p2p) != len(judged):
            return self._record(m, "flaky", "some tests were skipped or went missing under the mutant",
                                recheck_s=recheck_s)
        messages = {t: report.tests[t].message for t in f2p[:MESSAGES_KEPT]}
        return self._record(m, "kept", fail_to_pass=f2p, pass_to_pass=p2p, messages=messages, recheck_s=recheck_s)

    @staticmethod
    def _problem(report: TestReport) -> tuple[Status, str] | None:
        if report.timed_out:
            where = f" ({report.stalled} stopped making progress)" if report.stalled else ""
            return "timeout", f"the tests did not finish in time, even alone{where}"
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
        site = bug_site(self.repo.read(self.base, m.file), m.line)
        named = names_function(site.function, rec.fail_to_pass)
        project = self.repo_name.split("/", 1)[1]
        statement = write_problem_statement(project, rec.fail_to_pass, rec.messages,
                                            forbidden=changed_lines(patch))
        instance = SweInstance(
            instance_id=self.instance_id(rec), repo=self.repo_name, base_commit=bug, patch=patch,
            problem_statement=statement, FAIL_TO_PASS=rec.fail_to_pass, PASS_TO_PASS=rec.pass_to_pass,
            version=self.version, environment_setup_commit=self.base,
            setup=self.setup.model_copy(update={"timeout_s": instance_timeout(base)}),
            mutation=MutationInfo(operator=m.operator, file=m.file, line=m.line, function=site.function,
                                  function_lines=site.lines, test_names_function=named),
            graded_as="unprivileged",  # the builder's tests run as the sandbox uid, never root
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

    def process(self, base: BaseRun, m: Mutation, slots: Slots) -> MutantRecord:
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
            self.env = project_env(self.setup.deps, self.sandbox)
            slots = Slots(self.repo, self.base, self.sandbox, self.workers, self.env, stack)
            base = self.base_run(slots)
            order = self.candidates(base)
            records = self.log.load()
            self._drive(base, order, records, slots)
        kept = self._kept_prefix(order, records)
        by_id = {m.id: m for m in order}
        for rec in kept:
            result.instances.append(self.make_instance(rec, by_id[rec.id], base))
        for rec in records.values():
            result.counts[rec.status] = result.counts.get(rec.status, 0) + 1
        rechecked = [r for r in records.values() if r.recheck_s]
        result.rechecked = len(rechecked)
        result.recheck_s = sum(r.recheck_s for r in rechecked)
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

    def _drive(self, base: BaseRun, order: list[Mutation], records: dict[str, MutantRecord], slots: Slots) -> None:
        """Test mutants in order, `workers` at a time, until the kept prefix is full or none are left."""
        todo = iter(m for m in order if m.id not in records)
        progress = progress_bar(self.console, note=True, enabled=self.progress)
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
                    self.log.append(rec)
                refresh()


def build_tasks(
    sources: list[Source],
    *,
    sandbox: Sandbox | str = "auto",
    max_per_project: int = DEFAULT_MAX_PER_PROJECT,
    seed: int = 0,
    workers: int = 2,
    deps: list[str] | None = None,
    pytest_args: list[str] | None = None,
    console: Console | None = None,
    progress: bool = True,
) -> list[SweInstance]:
    """Build validated instances from every source (splits are not assigned here).

    `pytest_args` are stored in every instance and used by every later run of its tests.
    All sources are fetched and checked for tests before any of them is built.
    """
    for dep in deps or []:
        try:
            plain_requirement(dep)
        except ValueError as e:
            raise SweTaskError(f"--deps {e}") from None
    backend = sealed_backend(sandbox) if isinstance(sandbox, str) else sandbox
    console = console or Console(stderr=True)
    fetch_sources(sources, backend)
    builders = [ProjectBuilder(source, backend, max_instances=max_per_project, seed=seed, workers=workers,
                               deps=list(deps or []), pytest_args=list(pytest_args or []), console=console,
                               progress=progress) for source in sources]
    instances: list[SweInstance] = []
    for builder in builders:
        result = builder.run()
        console.print(f"{result.repo}: {len(result.instances)} instances "
                      f"({json.dumps(dict(sorted(result.counts.items())))} over all mutants tested so far; "
                      f"{result.rechecked} re-checked alone after a timeout, {result.recheck_s:.0f} s)")
        instances += result.instances
    return instances
