"""Options as a user meets them in --help: a version, choices that are listed and enforced, placeholders kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent import __version__
from meta_agent.cli import app

runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_version_prints_the_package_version() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"meta-agent {__version__}"


@pytest.mark.parametrize(("args", "choices"), [
    (["eval", "--split", "train"], ["selection", "test"]),
    (["evolve", "--control", "dynamic"], ["static", "none"]),
    (["evolve", "--tracker", "wandb"], ["none", "tensorboard", "trackio", "mlflow"]),
    (["tasks", "import", "x.jsonl", "--split", "half"], ["keep", "auto", "train", "selection", "test"]),
])
def test_a_choice_option_refuses_other_values_and_names_the_choices(args: list[str], choices: list[str]) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert all(f"'{c}'" in flat(res.output) for c in choices), res.output


def test_help_lists_the_choices_of_a_choice_option() -> None:
    res = runner.invoke(app, ["eval", "--help"], terminal_width=200)
    assert "<selection|test>" in res.output, res.output


@pytest.mark.parametrize("command", ["evolve", "rollout"])
def test_run_dir_help_shows_its_placeholders_literally(command: str) -> None:
    res = runner.invoke(app, [command, "--help"], terminal_width=200)
    assert f"runs/<time>-{command}-<domain>" in flat(res.output), res.output


def test_track_on_a_directory_without_a_run_says_so_in_one_line(tmp_path: Path) -> None:
    res = runner.invoke(app, ["track", str(tmp_path), "--tracker", "mlflow"])
    assert res.exit_code == 1 and "holds no evolve run" in flat(res.output), res.output
    assert "Traceback" not in res.output and "File " not in res.output


def test_commands_are_listed_in_the_order_a_user_meets_them() -> None:
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    order = ["init", "rollout", "evolve", "resume", "status", "history", "show", "lineage", "prune", "eval"]
    at = [out.index(f"│ {name} ") for name in order]
    assert at == sorted(at), out


def test_long_help_is_wrapped_by_the_terminal_not_by_the_source() -> None:
    out = runner.invoke(app, ["evolve", "--help"], env={"COLUMNS": "300"}).output
    assert "(in a sandbox), writes a rollout report, has the proposer turn its failure modes" in out, out
    out = runner.invoke(app, ["resume", "--help"], env={"COLUMNS": "300"}).output
    assert "(they may be what stopped it); give new ones here. --executor" in out, out


def test_evolve_options_are_grouped_under_headings() -> None:
    out = runner.invoke(app, ["evolve", "--help"], env={"COLUMNS": "200"}).output
    headings = ["What trains", "The search", "The proposer and its LLM", "Budgets", "Where it runs"]
    at = [out.index(f"─ {h}") for h in headings]
    assert at == sorted(at), out
    assert out.index("--budget-minutes") > out.index("─ Budgets") > out.index("--coder-model"), out
