"""Per-domain generation defaults: a plain `evolve --domain math` must judge candidates on enough steps and
selection tasks for the gate to see a real change (docs/evolve.md, "Fifth measurement"), say what that costs,
and keep the values a run started with when the defaults change later."""

from __future__ import annotations

import dataclasses
import re

import pytest
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.config import EvolveConfig, build
from meta_agent.domains import BUILTIN

PLUGIN = "tests.evolve.plugins.letters_domain:LettersDomain"


def test_math_defaults_are_the_measurable_ones() -> None:
    cfg = EvolveConfig(domain="math")
    assert (cfg.steps, cfg.selection_limit) == (8, 100)
    assert cfg.math.selection_size >= cfg.selection_limit, "the default split holds the tasks the limit asks for"
    assert EvolveConfig(domain="swe").selection_limit == 30


def test_explicit_values_win_and_null_means_the_whole_split() -> None:
    assert build(EvolveConfig, {"domain": "math"}, {"selection_limit": 12}).selection_limit == 12
    assert build(EvolveConfig, {"selection_limit": 40}, {"domain": "code"}).selection_limit == 40
    assert EvolveConfig.model_validate({"domain": "math", "selection_limit": None}).selection_limit is None
    with pytest.raises(Exception, match="unknown domain"):
        build(EvolveConfig, {"domain": "chess"}, {})


def test_a_resumed_run_keeps_the_defaults_it_started_with(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = EvolveConfig(domain="math").model_dump(mode="json")
    monkeypatch.setitem(BUILTIN, "math", dataclasses.replace(BUILTIN["math"], default_selection_limit=7))
    assert EvolveConfig(domain="math").selection_limit == 7, "a new run takes the new default"
    assert EvolveConfig.model_validate(saved).selection_limit == 100, "the saved run keeps its own"


def test_a_plugin_domain_may_name_its_default() -> None:
    assert EvolveConfig(domain=PLUGIN).selection_limit == 4
    assert EvolveConfig(domain=PLUGIN).steps == 1


def test_help_states_each_domains_defaults_and_their_cost() -> None:
    res = CliRunner().invoke(app, ["evolve", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    text = re.sub(r"[\s│]+", " ", res.output)
    for name, entry in BUILTIN.items():
        assert f"{name} {entry.default_train_steps} steps, {entry.default_selection_limit} selection tasks" in text
    assert "--selection-limit" in text
    assert "min per generation" in text, "the cost of the math defaults is stated"
