"""Mutation operators: one small edit inside the node's span, valid Python, deterministic order."""

from __future__ import annotations

import ast
import difflib

from meta_agent.swe.mutate import OPERATORS, find_mutations, is_effective, order_mutations
from tests.swe_tasks.swe_test_projects import CALC

UNICODE = '''\
def greet(name):
    prefix = "héllo wörld ✓"
    if len(name) > 3:
        return prefix + " " + name[1:]
    return prefix
'''


def _hunks(old: str, new: str) -> list[str]:
    return [ln for ln in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if ln.startswith("@@")]


def test_every_operator_fires_on_the_calc_module() -> None:
    found = {m.operator for m in find_mutations(CALC, "calc.py")}
    assert found == set(OPERATORS)


def test_each_mutation_is_one_hunk_that_parses() -> None:
    for source in (CALC, UNICODE):
        for m in find_mutations(source, "x.py"):
            mutated = m.apply(source)
            ast.parse(mutated)
            assert len(_hunks(source, mutated)) == 1, m
            assert source[: m.start] == mutated[: m.start], "text before the span is untouched"
            assert source[m.end :] == mutated[m.start + len(m.replacement) :], "text after the span is untouched"


def test_mutations_change_the_program_not_just_its_formatting() -> None:
    muts = find_mutations(CALC, "calc.py")
    assert sum(is_effective(CALC, m.apply(CALC)) for m in muts) == len(muts)


def test_spans_are_correct_after_multibyte_characters() -> None:
    muts = find_mutations(UNICODE, "u.py")
    slices = [m for m in muts if m.operator == "off_by_one"]
    assert slices and all(m.original == "1" and m.replacement == "2" for m in slices)
    compare = next(m for m in muts if m.operator == "compare_op")
    assert compare.original == ">" and compare.apply(UNICODE).count("len(name) >= 3") == 1


def test_order_is_deterministic_for_a_seed_and_spread_over_operators() -> None:
    muts = find_mutations(CALC, "calc.py")
    first = [m.id for m in order_mutations(muts, 1)]
    assert first == [m.id for m in order_mutations(list(reversed(muts)), 1)]
    assert first != [m.id for m in order_mutations(muts, 2)]
    head = order_mutations(muts, 1)[: len(OPERATORS)]
    assert len({m.operator for m in head}) == len(OPERATORS), "a capped build sees every operator early"


def test_unreachable_blocks_are_not_mutated() -> None:
    source = "import sys\n\nif __name__ == '__main__':\n    x = 1 + 2\n    print(x)\n"
    assert find_mutations(source, "m.py") == []
