"""A SWE step in micro-batches (`rl.micro_batch_size: 1`, the SWE reference's setting): the multi-turn rollout
loop still plays the whole group at once, and its episodes then go through backward one at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # trains a model: not in `make test-fast`


def test_a_swe_step_trains_its_group_one_episode_per_pass(harness_modules: Path, train_tasks: Path,
                                                          tiny_policy: Path, tmp_path: Path) -> None:
    path = harness_modules / "harness.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["rl"]["micro_batch_size"] = 1
    cfg["domain_settings"].update({"max_turns": 2, "turn_tokens": 32})
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    # its own process, as meta-agent runs it: training patches TRL's log-prob head for the whole process
    subprocess.run([sys.executable, "-m", "harness", "train", "--policy", str(tiny_policy), "--steps", "2",
                    "--out", str(out), "--tasks", str(train_tasks)], cwd=harness_modules, check=True, timeout=900,
                   env={**os.environ, "PYTHONPATH": str(harness_modules)})
    rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines() if line.strip()]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    group = cfg["rl"]["num_generations"]
    # two optimizer steps, each on one whole group played together (not four groups of one)
    assert [m["step"] for m in metrics] == [1, 2]
    assert len(rollouts) == 2 * group and len({r["group_id"] for r in rollouts}) == 2
    assert any(out.glob("**/adapter_model.safetensors"))
