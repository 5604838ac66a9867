"""How hard a built instance is, from facts about its injected bug (SWE-smith's instances carry the
same kind of metadata): which kind of mutation it is, how big the function holding it is, and whether
a failing test names that function. A small policy fixes a one-token bug in a short function that a
failing test points at sometimes; it rarely finds a dropped statement in a 60-line function that only an
integration test exercises.

The tier is what a curriculum or a task-set filter uses; the facts behind it stay private (they locate
the bug) and are never shown to a policy or a harness.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from meta_agent.swe.mutate import parse

Tier = Literal["easy", "medium", "hard"]
TIERS: tuple[Tier, ...] = ("easy", "medium", "hard")

ONE_TOKEN_FIXES = frozenset({"compare_op", "arith_op", "bool_op", "off_by_one", "negate_cond"})
"""Operators whose fix is one token at the reported line: swap an operator back, drop a `not`, ±1."""
EASY_MAX_LINES = 15
"""A function this short fits, whole, in a small model's view of one file read."""
HARD_MIN_LINES = 40
HARD_MIN_FAILING = 6
"""Many failing tests: the bug sits in code many paths share, the failures point everywhere."""


@dataclass(frozen=True)
class BugSite:
    """The function that holds a bug: its qualified name (None at module level) and its length in lines."""

    function: str | None
    lines: int | None


def bug_site(source: str, line: int) -> BugSite:
    """The innermost function (or method) of `source` whose body spans `line`."""
    return site_finder(source)(line)


def site_finder(source: str) -> Callable[[int], BugSite]:
    """`bug_site` for many lines of one source, parsed once."""
    try:
        tree = parse(source)
    except SyntaxError:
        return lambda line: BugSite(None, None)
    functions: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    functions.append((name, child))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")

    def find(line: int) -> BugSite:
        best = None  # the last spanning function in visiting order is the innermost
        for name, fn in functions:
            if fn.lineno <= line <= (fn.end_lineno or fn.lineno):
                best = (name, fn)
        return BugSite(None, None) if best is None else BugSite(best[0], code_lines(best[1]))

    return find


def code_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's length in lines, decorators included and its docstring left out: a docstring is read, not
    searched, so a 5-line function under a 20-line docstring is as easy to find a bug in as a bare one.
    (Sets built before this counted the docstring; their recorded `function_lines` stay as they were.)"""
    start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
    lines = (fn.end_lineno or fn.lineno) - start + 1
    first = fn.body[0] if fn.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
            and len(fn.body) > 1):
        lines -= (first.end_lineno or first.lineno) - first.lineno + 1
    return lines


def names_function(function: str | None, failing: list[str]) -> bool:
    """A failing test's id names the function (`test_parse_date` for `parse_date`, `Cal::test_add` for
    `Cal.add`): the failure report already points at it."""
    if not function:
        return False
    short = function.rsplit(".", 1)[-1].strip("_").lower()
    if len(short) < 3:
        return False  # `f`, `go`: too short to count as named
    return any(short in test.split("::", 1)[-1].lower() for test in failing if "::" in test)


def likely_easy(operator: str, site: BugSite, covering: list[str]) -> bool:
    """Whether a mutant, not yet tested, would make an easy instance if the tests that execute its line and
    name its function are among those it fails (the build tries these first)."""
    return (operator in ONE_TOKEN_FIXES and site.lines is not None and site.lines <= EASY_MAX_LINES
            and names_function(site.function, covering))


def tier(operator: str, lines: int | None, named: bool, failing: int) -> Tier:
    """easy: a one-token fix in a short function a failing test names; hard: a bug outside any function,
    in a long one, or behind many failing tests; medium: the rest."""
    if lines is None or lines >= HARD_MIN_LINES or failing >= HARD_MIN_FAILING:
        return "hard"
    if operator in ONE_TOKEN_FIXES and lines <= EASY_MAX_LINES and named:
        return "easy"
    return "medium"
