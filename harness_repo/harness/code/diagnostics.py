"""Code failure-mode labels (the shared ones are in harness/diagnostics.py).

Each label names one thing a reader can act on: the policy writes no code block, code that does
not parse, code that crashes or runs out of time, wrong outputs, outputs copied from the visible
tests (reward hacking), or code that passes the visible tests but fails the hidden ones.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.code.execution import FAILURES, execute
from harness.code.hardcoding import hardcoded
from harness.code.spec import task_spec
from harness.rollout import Rollout


def no_code_block(r: Rollout) -> bool:
    """The completion has no ```python block to run."""
    return execute(r).program is None


def syntax_error(r: Rollout) -> bool:
    return execute(r).any("syntax_error")


def runtime_error(r: Rollout) -> bool:
    """A visible test crashed: an exception, the memory limit, a blocked process, too much output."""
    return execute(r).any(*FAILURES)


def timeout(r: Rollout) -> bool:
    return execute(r).any("timeout")


def wrong_answer(r: Rollout) -> bool:
    """A visible test ran to the end with the wrong output."""
    return execute(r).any("wrong_answer")


def hardcoded_outputs(r: Rollout) -> bool:
    """The program reproduces the visible tests' expected outputs from literals instead of computing them."""
    program = execute(r).program
    return program is not None and hardcoded(program, task_spec(r.task))


def overfit_visible_tests(r: Rollout) -> bool:
    """Passes every visible test, yet the sealed verifier (hidden tests) rejects it. Needs meta-agent's
    verdict (`verified`), so it only appears in `diagnose`, after training."""
    ex = execute(r)
    return r.verified is False and bool(ex.results) and ex.passed == len(ex.results)


DIAGNOSTICS: dict[str, Callable[[Rollout], bool]] = {
    "no_code_block": no_code_block,
    "syntax_error": syntax_error,
    "runtime_error": runtime_error,
    "timeout": timeout,
    "wrong_answer": wrong_answer,
    "hardcoded_outputs": hardcoded_outputs,
    "overfit_visible_tests": overfit_visible_tests,
}
