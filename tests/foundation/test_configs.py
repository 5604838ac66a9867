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
