"""The example configs load, and `evolve --print-config` prints a config that gives back the same run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.config import EvolveConfig

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
runner = CliRunner()


def _printed(*args: str) -> dict[str, object]:
    res = runner.invoke(app, ["evolve", *args, "--print-config"])
    assert res.exit_code == 0, res.output
    return dict(yaml.safe_load(res.output))


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_each_example_config_loads_and_prints_back_the_same_run(config: Path, tmp_path: Path) -> None:
    printed = _printed("--config", str(config))
    asked = yaml.safe_load(config.read_text())
    assert printed["domain"] == asked["domain"] and printed["generations"] == asked.get("generations", 2)
    again = tmp_path / "printed.yaml"
    again.write_text(yaml.safe_dump(printed))
    assert _printed("--config", str(again)) == printed, "the printed config is a config file for the same run"


def test_print_config_resolves_every_default_and_the_options_over_the_file() -> None:
    printed = _printed("--domain", "swe", "--sandbox", "bwrap", "-g", "3")
    cfg = EvolveConfig.model_validate(printed)
    assert cfg.train_steps == 2 and cfg.selection_limit is not None, "the domain's defaults, written out"
    assert cfg.generations == 3 and cfg.swe.sandbox == "bwrap" and cfg.sandbox.backend == "bwrap"
    assert len(CONFIGS) >= 4


def test_an_option_overrides_one_key_of_a_section_and_keeps_the_files_others(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"llm": {"model": "openai/file-model", "api_base": "http://localhost:9/v1"},
                                      "budget": {"llm_tokens": 5000}, "sandbox": {"memory_mb": 3000},
                                      "executor": {"retries": 3}}))
    printed = _printed("--config", str(config), "--model", "openai/cli-model", "--budget-minutes", "30",
                       "--sandbox", "process", "--parallel", "2")
    llm, budget, sandbox, executor = (dict(printed[k]) for k in ("llm", "budget", "sandbox", "executor"))
    assert (llm["model"], llm["api_base"]) == ("openai/cli-model", "http://localhost:9/v1")
    assert (budget["wall_minutes"], budget["llm_tokens"]) == (30, 5000)
    assert (sandbox["backend"], sandbox["memory_mb"]) == ("process", 3000)
    assert (executor["parallel"], executor["retries"]) == (2, 3)


def test_resume_layers_its_options_over_the_saved_settings_as_evolve_layers_them_over_a_file(tmp_path: Path) -> None:
    """One path: the run's saved settings take the place of the file; its old budgets do not come back."""
    from meta_agent.evolve import load_for_resume
    from meta_agent.runinfo import RunInfo, write_run_info

    saved = EvolveConfig.model_validate({"llm": {"model": "openai/m", "api_base": "http://localhost:9/v1"},
                                         "budget": {"wall_minutes": 5, "llm_tokens": 100}, "train_steps": 7})
    write_run_info(tmp_path, RunInfo(command="evolve", domain="math", harness=str(tmp_path / "h"), policy="tiny",
                                     created="now", settings=saved.model_dump(mode="json")))
    resumed = load_for_resume(tmp_path, {"budget": {"llm_tokens": 900}, "tracker": "tensorboard"})
    assert resumed.llm.api_base == "http://localhost:9/v1" and resumed.train_steps == 7
    assert (resumed.budget.wall_minutes, resumed.budget.llm_tokens) == (None, 900)
    assert resumed.tracker == "tensorboard" and resumed.run_dir == tmp_path
