"""`bench/efficacy.py --proposer llm --model M --api-base URL`: the same benchmark with the LLM agents, here
against the replay server (recorded replies, real litellm client). The evolve arm's candidates come from the
diagnostician and coder; the search controls stay what they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from meta_agent.eventlog import EventLog
from meta_agent.journal import CandidateCreated
from tests.conftest import TEST_SANDBOX
from tests.evolve.conftest import data_env
from tests.llm.replay_server import ReplayServer, Scenario

pytestmark = pytest.mark.slow  # the whole benchmark on the tiny policy

BENCH = Path(__file__).resolve().parents[2] / "bench" / "efficacy.py"
CONVERSATION = Path(__file__).parent / "conversations" / "efficacy_llm.yaml"


def test_the_benchmark_runs_its_evolve_arm_with_the_llm_agents_it_is_given(tmp_path: Path) -> None:
    server = ReplayServer().start()
    try:
        server.load(Scenario.load(CONVERSATION))
        out = tmp_path / "efficacy"
        res = subprocess.run(
            [sys.executable, str(BENCH), "--preset", "tiny", "--seeds", "1", "--out", str(out), "--sandbox",
             TEST_SANDBOX, "--proposer", "llm", "--model", "openai/replay", "--api-base", server.api_base],
            capture_output=True, text=True, timeout=1500,
            env={**data_env(tmp_path / "data", scripted=True), "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert server.errors == []
    finally:
        server.stop()
    report = json.loads((out / "report.json").read_text())
    assert report["search"]["proposer"] == "llm"
    seed_dir = out / "seed-0"
    [created] = EventLog(seed_dir / "evolve").of_type(CandidateCreated)
    assert created.ok and created.title == "Double the LoRA learning rate of the reference"
    harness = git.Repo(seed_dir / "evolve-harness")
    assert "learning_rate: 0.0002" in harness.git.show(f"{created.commit}:harness.yaml"), "the coder's edit"
    assert all(c.title.startswith("Random control") for c in EventLog(seed_dir / "random").of_type(CandidateCreated))
    run = report["seeds"][0]["run"]
    assert run["compute"]["evolved"]["steps"] == run["compute"]["random_search"]["steps"]

    # The gate merged nothing, so the final harness is the reference's files: `retrained` is reference_rollout's
    # training and result (the same job), not a second training, and the report says so.
    assert run["merged"] == [] and run["reused"] == {"retrained": "reference_rollout"}
    assert not [line for line in res.stdout.splitlines() if "meta-agent rollout" in line and "retrained" in line]
    results = seed_dir / "results"
    assert (results / "retrained.json").read_bytes() == (results / "reference_rollout.json").read_bytes()
    assert run["compute"]["retrained"] == run["compute"]["reference_rollout"] and run["wall_s"]["retrained"] == 0
    assert "The retrained arm is reference_rollout's training and result" in (out / "report.md").read_text()
