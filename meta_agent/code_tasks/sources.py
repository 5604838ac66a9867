"""Builds the code problem set from its sources, checks tests against reference solutions, caches it.

Building runs code (CodeI/O references generate tests; references are checked against every
test), always in the sandbox, so the result is cached under META_AGENT_CACHE/code-tasks/ keyed by
the source settings and the content of the code that builds it: a second run starts instantly.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from meta_agent.code_tasks import codeio, humaneval, importer
from meta_agent.code_tasks.executor import ProgramExecutor, ProgramJob
from meta_agent.code_tasks.problem import CodeProblem
from meta_agent.contract import write_jsonl
from meta_agent.paths import cache_dir

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
BUILDERS = ("codeio.py", "humaneval.py", "importer.py", "runner.py", "child.py", "problem.py", "sources.py")


def _code_version() -> str:
    h = hashlib.sha256()
    for name in BUILDERS:
        h.update((HERE / name).read_bytes())
    return h.hexdigest()[:12]


def _cached(key: str, build: Callable[[], list[CodeProblem]]) -> list[CodeProblem]:
    path = cache_dir() / "code-tasks" / f"{key}-{_code_version()}.jsonl"
    if path.is_file():
        return [CodeProblem.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]
    problems = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, problems)
    return problems


def check_references(problems: list[CodeProblem], executor: ProgramExecutor) -> list[CodeProblem]:
    """Drop visible tests a problem's reference fails (wrong examples) and problems whose reference
    fails a hidden test (broken tests or reference); problems without a reference stay as they are."""
    with_ref = [p for p in problems if p.reference]
    runs = executor.run([ProgramJob(id=p.id, program=f"{p.prelude}\n{p.reference}", entry_point=p.entry_point,
                                    tests=[*p.visible, *p.hidden]) for p in with_ref])
    out = []
    dropped = 0
    for p in problems:
        run = runs.get(p.id)
        if run is None:
            out.append(p)
            continue
        visible_ok, hidden_ok = run.outcomes[: len(p.visible)], run.outcomes[len(p.visible) :]
        if not all(o.verdict == "passed" for o in hidden_ok):
            dropped += 1
            continue
        visible = [t for t, o in zip(p.visible, visible_ok, strict=True) if o.verdict == "passed"]
        out.append(p.model_copy(update={"visible": visible}))
    if dropped:
        log.warning("code tasks: dropped %d problems whose reference solution fails their own tests", dropped)
    return out


def load_source(name: str, executor: ProgramExecutor, codeio_problems: int) -> list[CodeProblem]:
    if name == "humaneval":
        return _cached("humaneval", lambda: humaneval.fill_missing_visible(
            check_references(humaneval.load(), executor)))
    if name == "codeio":
        return _cached(f"codeio-{codeio_problems}", lambda: check_references(codeio.load(codeio_problems, executor),
                                                                             executor))
    raise ValueError(f"unknown code task source {name!r}; available: humaneval, codeio")


def load_file(path: Path, executor: ProgramExecutor, visible: int) -> list[CodeProblem]:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return _cached(f"import-{path.stem}-{digest}-v{visible}",
                   lambda: check_references(list(importer.read_file(path, visible)), executor))
