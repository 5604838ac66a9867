"""stdin/stdout and function-call problems, imported from the JSONL shapes users bring (MBPP, APPS,
CodeContests, LiveCodeBench, generic), judged in the sandbox: right programs pass, wrong ones fail."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest

from meta_agent.code_tasks.executor import ProgramExecutor, ProgramJob
from meta_agent.code_tasks.importer import ImportFormatError, read_file
from meta_agent.code_tasks.problem import CodeProblem

SUM_STDIO = "a, b = map(int, input().split())\nprint(a + b)\n"
WRONG_STDIO = "a, b = map(int, input().split())\nprint(a * b)\n"
ROWS = {
    "mbpp": ({"task_id": 11, "text": "Write a function to add two numbers.", "code": "def add(a, b):\n    return a + b",
              "test_list": ["assert add(2, 3) == 5", "assert add(-4, 4) == 0", "assert add(10, 5) == 15"]},
             "def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a - b\n"),
    "apps-stdio": ({"problem_id": 7, "question": "Print the sum of two integers.", "difficulty": "interview",
                    "input_output": json.dumps({"inputs": ["3 4\n", "10 20\n"], "outputs": ["7\n", "30\n"]}),
                    "solutions": json.dumps([SUM_STDIO])}, SUM_STDIO, WRONG_STDIO),
    "apps-call": ({"problem_id": 8, "question": "Return the sum.", "starter_code": "def add(a, b):",
                   "input_output": json.dumps({"fn_name": "add", "inputs": [[1, 2], [5, 5]], "outputs": [[3], [10]]})},
                  "def add(a, b):\n    return a + b\n", "def add(a, b):\n    return 3\n"),
    "codecontests": ({"name": "1A_sum", "description": "Print a+b.", "difficulty": 7,
                      "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
                      "private_tests": {"input": ["5 6\n", "100 -1\n"], "output": ["11\n", "99\n"]},
                      "generated_tests": {"input": [], "output": []}}, SUM_STDIO, WRONG_STDIO),
    "livecodebench": ({"question_id": "lc1", "question_title": "Sum", "question_content": "Return a + b.",
                       "platform": "leetcode", "difficulty": "easy",
                       "starter_code": "class Solution:\n    def add(self, a: int, b: int) -> int:\n",
                       "public_test_cases": json.dumps([{"input": "1\n2", "output": "3", "testtype": "functional"}]),
                       "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps(json.dumps(
                           [{"input": "-5\n5", "output": "0", "testtype": "functional"}])))).decode(),
                       "metadata": json.dumps({"func_name": "add"})},
                      "class Solution:\n    def add(self, a, b):\n        return a + b\n",
                      "class Solution:\n    def add(self, a, b):\n        return a\n"),
    "generic-stdio": ({"id": "g1", "prompt": "Sum two numbers.", "tests": [{"input": "2 2", "output": "4"},
                                                                         {"input": "0 9", "output": "9"}]},
                      SUM_STDIO, WRONG_STDIO),
}


def _load(tmp_path: Path, name: str) -> CodeProblem:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps(ROWS[name][0]) + "\n")
    (problem,) = read_file(path)
    return problem


@pytest.mark.parametrize("name", sorted(ROWS))
def test_imported_problem_judges_right_and_wrong_programs(name: str, tmp_path: Path, executor: ProgramExecutor) -> None:
    problem = _load(tmp_path, name)
    _, right, wrong = ROWS[name]
    assert problem.visible and len(problem.hidden) >= len(problem.visible)
    expected_io = "stdio" if "stdio" in name or name == "codecontests" else "call"
    assert problem.io == expected_io
    runs = executor.run([ProgramJob(id="right", program=right, tests=problem.hidden, entry_point=problem.entry_point),
                         ProgramJob(id="wrong", program=wrong, tests=problem.hidden, entry_point=problem.entry_point)])
    assert runs["right"].passed, runs["right"].summary()
    assert not runs["wrong"].passed


def test_public_tests_are_visible_and_private_ones_hidden(tmp_path: Path) -> None:
    problem = _load(tmp_path, "codecontests")
    assert [t.stdin for t in problem.visible] == ["1 2\n"]
    assert {t.stdin for t in problem.hidden} == {"1 2\n", "5 6\n", "100 -1\n"}
    assert "5 6" not in json.dumps(problem.task().model_dump()), "hidden tests never reach the harness's Task"


def test_a_pickled_object_in_a_task_file_is_refused(tmp_path: Path) -> None:
    row = dict(ROWS["livecodebench"][0])
    row["private_test_cases"] = base64.b64encode(zlib.compress(pickle.dumps(Path("/etc/passwd")))).decode()
    path = tmp_path / "evil.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ImportFormatError, match=r"evil.jsonl:1: .*refusing to load"):
        list(read_file(path))


def test_an_unknown_shape_names_file_line_and_known_keys(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text('{"question": "x"}\n')
    with pytest.raises(ImportFormatError, match=r"odd.jsonl:1: .*test_list"):
        list(read_file(path))
