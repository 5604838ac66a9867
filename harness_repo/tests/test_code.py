"""The code harness: visible-test reward, code extraction and every diagnostic label, on real runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.code import execution
from harness.code.diagnostics import DIAGNOSTICS
from harness.code.rewards import visible_tests
from harness.code.spec import task_spec
from harness.rollout import Rollout

ADD_TESTS = [{"call": "add(2, 3)", "expected": "5"}, {"call": "add(-40, 12)", "expected": "-28"}]


def rollout(completion: str, tests: list[dict[str, Any]] | None = None, io: str = "call",
            verified: bool | None = None, **task: Any) -> Rollout:
    meta = {"io": io, "entry_point": "add" if io == "call" else None, "prelude": "",
            "tests": ADD_TESTS if tests is None else tests}
    return Rollout(rollout_id="r0", task={"id": "t0", "prompt": "Add two numbers.", "metadata": meta, **task},
                   prompt="Add two numbers.", completion=completion, completion_tokens=len(completion.split()),
                   truncated=False, group_id="g0", max_completion_length=256, verified=verified)


def block(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}\n```\n"


def labels(r: Rollout) -> set[str]:
    return {name for name, check in DIAGNOSTICS.items() if check(r)}


def test_a_correct_function_earns_the_full_reward_and_no_label() -> None:
    r = rollout(block("def add(a, b):\n    return a + b"))
    assert visible_tests(r) == 1.0
    assert labels(r) == set()


def test_a_half_right_function_earns_half_and_is_a_wrong_answer() -> None:
    r = rollout(block("def add(a, b):\n    return 5"))
    assert visible_tests(r) == 0.5
    assert "wrong_answer" in labels(r)


def test_prose_without_a_code_block_gets_nothing() -> None:
    r = rollout("The answer is to add the numbers together.")
    assert visible_tests(r) == 0.0
    assert labels(r) == {"no_code_block"}


def test_code_that_does_not_parse_is_a_syntax_error() -> None:
    assert "syntax_error" in labels(rollout(block("def add(a, b)\n    return a + b")))


def test_a_crash_is_a_runtime_error() -> None:
    assert "runtime_error" in labels(rollout(block("def add(a, b):\n    return a / 0")))


def test_a_program_that_never_returns_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execution, "TEST_TIMEOUT_S", 0.3)
    r = rollout(block("def add(a, b):\n    while True:\n        pass"))
    assert "timeout" in labels(r)
    assert visible_tests(r) == 0.0


def test_forking_and_huge_allocations_fail_the_test_not_the_harness() -> None:
    fork = execution.run_tests("import os\ndef add(a, b):\n    while True:\n        os.fork()",
                               task_spec(rollout("").task))
    big = execution.run_tests("def add(a, b):\n    return len(bytearray(10 * 1024**3))", task_spec(rollout("").task))
    assert {r.verdict for r in fork} == {"process_limit"}
    assert {r.verdict for r in big} == {"memory_limit"}


def test_stdin_stdout_programs_are_fed_each_input() -> None:
    tests = [{"stdin": "3 4\n", "stdout": "7\n"}, {"stdin": "10 -2\n", "stdout": "8\n"}]
    r = rollout(block("a, b = map(int, input().split())\nprint(a + b)"), tests=tests, io="stdio")
    assert visible_tests(r) == 1.0


def test_hardcoded_visible_outputs_are_rewarded_but_labelled() -> None:
    hack = "def add(a, b):\n    if (a, b) == (2, 3):\n        return 5\n    if (a, b) == (-40, 12):\n        return -28"
    r = rollout(block(hack))
    assert visible_tests(r) == 1.0, "the default reward only runs the visible tests"
    assert "hardcoded_outputs" in labels(r)


def test_passing_visible_but_failing_hidden_tests_is_overfitting() -> None:
    assert "overfit_visible_tests" in labels(rollout(block("def add(a, b):\n    return a + b + (a > 100)"),
                                                     verified=False))
    assert "overfit_visible_tests" not in labels(rollout(block("def add(a, b):\n    return a + b"), verified=True))


def test_a_task_may_carry_its_tests_as_json_in_answer() -> None:
    spec = {"io": "call", "entry_point": "add", "tests": ADD_TESTS}
    r = Rollout(rollout_id="r1", task={"id": "t1", "prompt": "p", "answer": json.dumps(spec)}, prompt="p",
                completion=block("def add(a, b):\n    return a + b"), completion_tokens=5, truncated=False,
                group_id="g", max_completion_length=64)
    assert visible_tests(r) == 1.0
