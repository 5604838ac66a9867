"""Difficulty tiers: built instances say how hard their bug is, `swe.tiers` draws from chosen tiers, and the
harness sees the tier as a task's difficulty, never the facts that locate the bug."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.domains.settings import SweSettings
from meta_agent.domains.swe import SweDomain
from meta_agent.swe.difficulty import (
    EASY_MAX_LINES,
    HARD_MIN_FAILING,
    HARD_MIN_LINES,
    BugSite,
    bug_site,
    names_function,
    tier,
)
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.taskset import save_taskset

SOURCE = textwrap.dedent('''\
    X = 1 + 2


    @cache
    def short(a):
        return a < 3


    class Cal:
        def add(self, a, b):
            def inner():
                return a + b
            return inner()
    ''')


def test_the_bug_site_is_the_innermost_function_with_its_decorators_counted() -> None:
    assert bug_site(SOURCE, 1) == BugSite(None, None)
    short = bug_site(SOURCE, 6)
    assert (short.function, short.lines) == ("short", 3)
    assert bug_site(SOURCE, 12).function == "Cal.add.inner"
    assert bug_site(SOURCE, 13).function == "Cal.add"
    assert bug_site("def broken(:\n", 1).function is None


def test_a_docstring_does_not_make_a_function_long() -> None:
    """more-itertools' functions are a few lines of code under a long docstring: the bug is no harder to find."""
    doc = "    \"\"\"Pairs.\n\n" + "    >>> pairs([1])\n" * 20 + "    \"\"\"\n"
    documented = "def pairs(xs):\n" + doc + "    return zip(xs, xs[1:])\n"
    assert bug_site(documented, 25) == BugSite("pairs", 2)
    only_doc = 'def stub():\n    """Only a docstring."""\n'
    assert bug_site(only_doc, 2) == BugSite("stub", 2), "a docstring that is the whole body is its code"


def test_a_failing_test_names_the_function_only_in_the_test_part_of_its_id() -> None:
    assert names_function("parse_date", ["tests/test_x.py::test_parse_date_iso"])
    assert names_function("Cal.add_days", ["tests/test_cal.py::TestCal::test_add_days"])
    assert not names_function("parse_date", ["tests/test_parse_date.py::test_other"]), "the file is not the test"
    assert not names_function("go", ["t.py::test_go"]), "too short a name proves nothing"
    assert not names_function(None, ["t.py::test_x"])


@pytest.mark.parametrize(("operator", "lines", "named", "failing", "expected"), [
    ("compare_op", 5, True, 1, "easy"),
    ("compare_op", 5, False, 1, "medium"),
    ("drop_stmt", 5, True, 1, "medium"),
    ("off_by_one", 20, True, 1, "medium"),
    ("compare_op", 50, True, 1, "hard"),
    ("compare_op", 5, True, 8, "hard"),
    ("compare_op", None, True, 1, "hard"),
])
def test_tiers(operator: str, lines: int | None, named: bool, failing: int, expected: str) -> None:
    assert tier(operator, lines, named, failing) == expected


def test_the_docs_state_the_thresholds_the_code_uses() -> None:
    docs = " ".join((Path(__file__).resolve().parents[2] / "docs" / "swe-tasks.md").read_text().split())
    assert f"at most {EASY_MAX_LINES} lines" in docs and f"one of {HARD_MIN_LINES} lines or more" in docs
    assert f"behind {HARD_MIN_FAILING} or more failing tests" in docs


@pytest.mark.slow  # builds a task set with real pytest runs in the sandbox
def test_built_instances_carry_their_difficulty(calc_instances: list[SweInstance]) -> None:
    for inst in calc_instances:
        m = inst.mutation
        assert m is not None and inst.tier is not None
        assert m.function and m.function_lines and m.function_lines < 20, "calc.py's functions are all short"
        assert m.test_names_function == names_function(m.function, inst.FAIL_TO_PASS)
    assert {i.tier for i in calc_instances} - {"easy", "medium"} == set()


def _tiered(calc_instances: list[SweInstance]) -> list[SweInstance]:
    """calc's instances, the first half made easy (a one-token bug in a 5-line function a test names),
    the rest hard (a 50-line function), all in every split."""
    easy = {"operator": "compare_op", "function_lines": 5, "test_names_function": True}
    hard = {"function_lines": HARD_MIN_LINES + 10, "test_names_function": False}
    out = []
    for n, inst in enumerate(calc_instances):
        assert inst.mutation is not None
        mutation = inst.mutation.model_copy(update=easy if n % 2 == 0 else hard)
        for split in ("train", "selection", "test"):
            out.append(inst.model_copy(update={"mutation": mutation, "split": split,
                                               "FAIL_TO_PASS": inst.FAIL_TO_PASS[:1],
                                               "instance_id": f"{inst.instance_id}-{split}"}))
    assert {i.tier for i in out} == {"easy", "hard"}
    return out


@pytest.mark.slow
def test_swe_tiers_draws_only_from_the_chosen_tiers(calc_instances: list[SweInstance]) -> None:
    save_taskset("tiered", _tiered(calc_instances), origin="test")
    easy = SweDomain(SweSettings(taskset="tiered", tiers=["easy"], train_size=None))
    assert easy.instances("train") and {i.tier for i in easy.instances("train")} == {"easy"}
    assert {t.difficulty for t in easy.tasks("train")} == {1}
    every = SweDomain(SweSettings(taskset="tiered", train_size=None))
    assert {t.difficulty for t in every.tasks("train")} == {1, 3}
    shown = json.dumps([t.model_dump() for t in every.tasks("train")])
    assert '"tier"' not in shown and "function_lines" not in shown, "the harness sees the tier as difficulty only"


@pytest.mark.slow
def test_tiers_on_a_set_without_tiers_is_refused_with_the_way_out(calc_instances: list[SweInstance]) -> None:
    untiered = [i.model_copy(update={"mutation": None}) for i in _tiered(calc_instances)]
    save_taskset("untiered", untiered, origin="test")
    with pytest.raises(SweTaskError, match=r"have no tier.*rebuild"):
        SweDomain(SweSettings(taskset="untiered", tiers=["easy"])).instances("train")
    assert SweDomain(SweSettings(taskset="untiered")).instances("train"), "all tiers: untiered ones are used"


@pytest.mark.slow
def test_tasks_list_counts_tiers(calc_instances: list[SweInstance]) -> None:
    save_taskset("tiered", _tiered(calc_instances), origin="test")
    out = CliRunner().invoke(app, ["tasks", "list", "--json"])
    assert out.exit_code == 0, out.output
    [row] = [r for r in json.loads(out.output) if r["name"] == "tiered"]
    half = (len(calc_instances) + 1) // 2
    assert row["tiers"]["train"] == {"easy": half, "hard": len(calc_instances) - half}
    text = CliRunner().invoke(app, ["tasks", "list"]).output
    assert f"train easy {half}" in text
