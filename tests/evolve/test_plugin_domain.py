"""A domain defined outside the package plugs in by name (`module:Class`) and runs `evolve` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evolve.conftest import data_env, tiny_config

pytestmark = pytest.mark.slow  # a whole (small) evolve run

PLUGINS = Path(__file__).parent / "plugins"


def test_a_plugin_domain_runs_evolve_end_to_end(tmp_path: Path) -> None:
    run = tmp_path / "letters"
    config = tiny_config(run, domain="letters_domain:LettersDomain", generations=1, candidates=1,
                         noise_reruns=0, control="none", train_steps=None,
                         plugin={"train_size": 16, "selection_size": 4, "test_size": 4},
                         math={"train_size": 1})  # the math section is ignored for another domain
    path = os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])
    env = {**data_env(tmp_path / "data"), "PYTHONPATH": path}
    res = subprocess.run([sys.executable, "-m", "meta_agent", "evolve", "--config", str(config)], env=env,
                         capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    started = json.loads((run / "events.jsonl").read_text().splitlines()[0])
    assert started["data"]["domain"] == "letters_domain:LettersDomain"
    tasks = [json.loads(line) for line in (run / "inputs" / "train_tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 16 and all("occur in" in t["prompt"] for t in tasks), "the plugin's own tasks and settings"
    assert (run / "harness" / "harness" / "math").is_dir(), "trained with the harness module the plugin names"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final"]["evolved"]["n"] == 4, "the sealed test split is the plugin's (test_size 4)"
    metrics = (run / "gen-000" / "main" / "metrics.jsonl").read_text().splitlines()
    assert len(metrics) == 1, "the plugin's default_train_steps applied"


def test_an_unknown_plugin_is_one_clear_error(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "meta_agent", "evolve", "--domain", "no_such_module:Nope",
                          "--run-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=300,
                         env=data_env(tmp_path / "data"))
    assert res.returncode == 1
    assert "cannot import module 'no_such_module'" in res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
