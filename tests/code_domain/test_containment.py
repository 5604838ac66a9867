"""Programs that sleep forever, fork, allocate 10 GB or flood stdout are stopped per test and reported
with their reason, while the other tests of the same batch pass."""

from __future__ import annotations

import pytest

from meta_agent.code_tasks.executor import ProgramExecutor, ProgramJob
from meta_agent.code_tasks.problem import CodeTest

ADD = "def add(a, b):\n    return a + b\n"
TESTS = [CodeTest(call="add(2, 3)", expected="5"), CodeTest(call="add(-1, 1)", expected="0")]
ATTACKS = {
    "sleep-forever": ("import time\ndef add(a, b):\n    time.sleep(10**6)\n", "timeout"),
    "busy-loop": ("def add(a, b):\n    while True:\n        pass\n", "timeout"),
    "fork-bomb": ("import os\ndef add(a, b):\n    while True:\n        os.fork()\n", "process_limit"),
    "ctypes-fork-bomb": ("import ctypes\ndef add(a, b):\n    libc = ctypes.CDLL(None)\n    while True:\n"
                         "        libc.fork()\n", "process_limit"),
    "subprocess": ("import subprocess\ndef add(a, b):\n    return int(subprocess.check_output(['echo', '5']))\n",
                   "process_limit"),
    "allocate-10gb": ("def add(a, b):\n    return len(bytearray(10 * 1024**3))\n", "memory_limit"),
    "list-10gb": ("def add(a, b):\n    return len([0] * (10**10 // 8))\n", "memory_limit"),
    "stdout-flood": ("def add(a, b):\n    while True:\n        print('x' * 10000)\n", "output_limit"),
    "exit-early": ("import os\ndef add(a, b):\n    os._exit(0)\n", "runtime_error"),
}


@pytest.fixture(scope="module")
def runs(executor: ProgramExecutor) -> dict[str, object]:
    jobs = [ProgramJob(id="healthy-before", program=ADD, tests=TESTS, entry_point="add")]
    jobs += [ProgramJob(id=name, program=program, tests=TESTS, entry_point="add")
             for name, (program, _) in ATTACKS.items()]
    jobs.append(ProgramJob(id="healthy-after", program=ADD, tests=TESTS, entry_point="add"))
    return dict(executor.run(jobs))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_attack_fails_its_tests_with_its_reason(runs: dict, attack: str) -> None:
    run = runs[attack]
    assert [o.verdict for o in run.outcomes] == [ATTACKS[attack][1]] * len(TESTS), run.summary()
    assert all(o.seconds < 10 for o in run.outcomes), "every test is stopped by its own limit"


def test_healthy_programs_in_the_same_batch_still_pass(runs: dict) -> None:
    assert runs["healthy-before"].passed and runs["healthy-after"].passed


def test_the_session_survives_and_runs_the_next_batch(runs: dict, executor: ProgramExecutor) -> None:
    again = executor.run([ProgramJob(id="again", program=ADD, tests=TESTS, entry_point="add")])
    assert again["again"].passed


def test_an_always_equal_object_does_not_pass_assert_tests(executor: ProgramExecutor) -> None:
    cheat = ("class Anything:\n    def __eq__(self, other):\n        return True\n\n"
             "def add(a, b):\n    return Anything()\n")
    code = CodeTest(code="def check(candidate):\n    assert candidate(2, 3) == 5\ncheck(add)\n")
    runs = executor.run([ProgramJob(id="cheat", program=cheat, tests=[code, *TESTS], entry_point="add")])
    assert not any(o.verdict == "passed" for o in runs["cheat"].outcomes), runs["cheat"].summary()
