"""Bring your own code problems: JSONL in the common shapes of MBPP, APPS, CodeContests, LiveCodeBench,
or a plain generic shape. The shape is recognised per line from its keys.

| shape | recognised by | tests |
|---|---|---|
| MBPP | `test_list` | `assert f(x) == y` lines (a call test when they parse as one, else assert code) |
| APPS | `input_output` | JSON `inputs`/`outputs`, a function call when `fn_name` is given, else stdin/stdout |
| CodeContests | `public_tests` | stdin/stdout; hidden = public + private + generated |
| LiveCodeBench | `public_test_cases` | stdin or functional (`metadata.func_name`, LeetCode `class Solution`) |
| generic | `prompt` + `tests` | [{input, output}] or [{call, expected}] or ["assert ..."] |

Visible tests are the dataset's public tests when it has them, else the first `visible` tests.
LiveCodeBench's compressed private tests (base64 + zlib + pickle of a JSON string) are decoded
with an unpickler that refuses every class, so a crafted file cannot run code.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import pickle
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from meta_agent.code_tasks.problem import CodeProblem, CodeTest, IoMode, examples_text
from meta_agent.errors import UserError

DIFFICULTY = {"introductory": 1, "easy": 1, "interview": 2, "medium": 2, "competition": 3, "hard": 3}
MAX_HIDDEN = 50


class ImportFormatError(UserError, ValueError):
    """A line of an imported file has none of the known shapes, or broken tests."""


class _NoClasses(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a task file")


def _json_field(value: Any) -> Any:
    """Fields that some dumps store as JSON strings (APPS, LiveCodeBench) and others as objects."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        return json.loads(value)
    if isinstance(value, str) and value:
        raw = zlib.decompress(base64.b64decode(value))
        return json.loads(_NoClasses(io.BytesIO(raw)).load())
    return value


def _text(value: Any) -> str:
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def assert_test(line: str) -> CodeTest:
    """`assert f(x) == y` becomes a call test (judged outside the program); anything else stays assert code."""
    try:
        node = ast.parse(line.strip()).body[0]
    except (SyntaxError, IndexError):
        return CodeTest(code=line)
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
            and isinstance(node.test.ops[0], ast.Eq) and isinstance(node.test.left, ast.Call):
        try:
            expected = ast.unparse(node.test.comparators[0])
            ast.literal_eval(expected)
            return CodeTest(call=ast.unparse(node.test.left), expected=expected)
        except (ValueError, SyntaxError):
            pass
    return CodeTest(code=line)


def _called_name(tests: list[CodeTest]) -> str | None:
    for t in tests:
        src = t.call or t.code or ""
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                return node.func.id
    return None


def _stdio(inputs: list[Any], outputs: list[Any]) -> list[CodeTest]:
    return [CodeTest(stdin=_text(i), stdout=_text(o)) for i, o in zip(inputs, outputs, strict=False)]


def _mbpp(row: dict[str, Any]) -> tuple[str, IoMode, str | None, list[CodeTest], list[CodeTest], str | None]:
    lines = list(row["test_list"]) + list(row.get("challenge_test_list") or [])
    setup = row.get("test_setup_code") or row.get("test_imports") or ""
    if isinstance(setup, list):
        setup = "\n".join(setup)
    # Tests that need setup code (imports, fixtures) run as assert code after it.
    tests = [CodeTest(code=f"{setup}\n{t}") for t in lines] if setup.strip() else [assert_test(t) for t in lines]
    prompt = row.get("text") or row.get("prompt") or ""
    return prompt, "call", _called_name(tests), [], tests, row.get("code")


def _apps(row: dict[str, Any]) -> tuple[str, IoMode, str | None, list[CodeTest], list[CodeTest], str | None]:
    spec = _json_field(row["input_output"])
    fn = spec.get("fn_name")
    solutions = _json_field(row.get("solutions") or "[]")
    reference = solutions[0] if solutions else None
    if fn:
        tests = []
        for args, out in zip(spec["inputs"], spec["outputs"], strict=False):
            # APPS wraps a function's result in a one-element list.
            want = out[0] if isinstance(out, list) and len(out) == 1 else out
            tests.append(CodeTest(call=f"{fn}(*{args!r})", expected=repr(want)))
        return row["question"], "call", fn, [], tests, reference
    return row["question"], "stdio", None, [], _stdio(spec["inputs"], spec["outputs"]), reference


def _codecontests(row: dict[str, Any]) -> tuple[str, IoMode, str | None, list[CodeTest], list[CodeTest], str | None]:
    public = _stdio(row["public_tests"]["input"], row["public_tests"]["output"])
    hidden = list(public)
    for key in ("private_tests", "generated_tests"):
        part = row.get(key) or {}
        hidden += _stdio(part.get("input", []), part.get("output", []))
    sols = row.get("solutions") or {}
    python = [s for lang, s in zip(sols.get("language", []), sols.get("solution", []), strict=False) if lang == 3]
    return row["description"], "stdio", None, public, hidden, python[0] if python else None


def _lcb_tests(cases: list[dict[str, Any]], fn: str | None) -> list[CodeTest]:
    tests = []
    for c in cases:
        if c.get("testtype") == "functional" and fn:
            args = [json.loads(line) for line in c["input"].splitlines() if line.strip()]
            tests.append(CodeTest(call=f"Solution().{fn}(*{args!r})", expected=repr(json.loads(c["output"]))))
        else:
            tests.append(CodeTest(stdin=c["input"], stdout=c["output"]))
    return tests


def _livecodebench(row: dict[str, Any]) -> tuple[str, IoMode, str | None, list[CodeTest], list[CodeTest], str | None]:
    meta = _json_field(row.get("metadata") or "{}")
    fn = meta.get("func_name") if isinstance(meta, dict) else None
    public = _lcb_tests(_json_field(row["public_test_cases"]), fn)
    private = _lcb_tests(_json_field(row.get("private_test_cases") or "[]"), fn)
    prompt = row["question_content"]
    if row.get("starter_code"):
        prompt += f"\n\nStart from:\n```python\n{row['starter_code']}\n```"
    return prompt, "call" if fn else "stdio", "Solution" if fn else None, public, public + private, None


def _generic(row: dict[str, Any]) -> tuple[str, IoMode, str | None, list[CodeTest], list[CodeTest], str | None]:
    tests: list[CodeTest] = []
    for t in row["tests"]:
        if isinstance(t, str):
            tests.append(assert_test(t))
        elif "call" in t:
            tests.append(CodeTest(call=t["call"], expected=t["expected"]))
        else:
            tests.append(CodeTest(stdin=_text(t["input"]), stdout=_text(t["output"])))
    io_mode: IoMode = "stdio" if tests and tests[0].kind == "stdio" else "call"
    entry = row.get("entry_point") or (_called_name(tests) if io_mode == "call" else None)
    public = tests[: row["visible"]] if isinstance(row.get("visible"), int) else []
    return row["prompt"], io_mode, entry, public, tests, row.get("solution")


SHAPES = (("test_list", _mbpp), ("input_output", _apps), ("public_tests", _codecontests),
          ("public_test_cases", _livecodebench), ("tests", _generic))


def _row_id(row: dict[str, Any], lineno: int) -> str:
    for key in ("task_id", "problem_id", "question_id", "name", "id"):
        if row.get(key) not in (None, ""):
            return str(row[key]).replace("/", "-").replace(" ", "_")
    return f"line{lineno}"


def parse_row(row: dict[str, Any], prefix: str, lineno: int, visible: int) -> CodeProblem:
    shape = next(((key, fn) for key, fn in SHAPES if key in row), None)
    if shape is None:
        raise ImportFormatError(f"no known shape (keys {sorted(row)[:8]}); expected one of "
                                f"{', '.join(k for k, _ in SHAPES)}")
    prompt, io_mode, entry, public, hidden, reference = shape[1](row)
    if not hidden:
        raise ImportFormatError("no tests")
    shown = public or hidden[:visible]
    if not public:
        prompt = f"{prompt.rstrip()}\n\nExamples:\n{examples_text(shown)}"
    difficulty = row.get("difficulty", 0)
    return CodeProblem(
        id=f"{prefix}-{_row_id(row, lineno)}", prompt=prompt, io=io_mode, entry_point=entry, visible=shown,
        hidden=hidden[:MAX_HIDDEN], source=prefix,
        difficulty=DIFFICULTY.get(str(difficulty).lower(), difficulty if isinstance(difficulty, int) else 0),
        reference=reference,
    )


def read_file(path: Path, visible: int = 1) -> Iterator[CodeProblem]:
    """Every problem of a JSONL file; the first bad line raises ImportFormatError naming file and line."""
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield parse_row(json.loads(line), path.stem, lineno, visible)
            except (ImportFormatError, ValueError, KeyError, TypeError, SyntaxError, zlib.error,
                    pickle.UnpicklingError) as e:
                raise ImportFormatError(f"{path}:{lineno}: {type(e).__name__}: {e}") from e
