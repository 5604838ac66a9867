"""End to end: `meta-agent evolve --domain code` on the tiny policy, real sandbox, skills proposer.

The shipped code harness rewards visible tests only, so main's replay pays the hard-coding probes;
the proposer must pick the code seed skill hardcoded-output-penalty, whose replay takes reward only
from rollouts the verifier rejects, so it is promoted and merged into main.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from meta_agent.gitops import init_harness
from meta_agent.journal import VerdictRecorded
from tests.conftest import TEST_SANDBOX, commit_all, journal
from tests.evolve.conftest import meta_agent, tiny_config

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


@pytest.fixture(scope="module")
def code_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("evolve-code")
    repo = init_harness(root / "harness", "code")
    settings = yaml.safe_load((root / "harness" / "harness.yaml").read_text())
    settings["rl"]["max_completion_length"] = 24  # the tiny policy writes noise: keep steps short
    (root / "harness" / "harness.yaml").write_text(yaml.safe_dump(settings))
    commit_all(repo, "Short completions for the tiny policy")
    run = root / "run"
    config = tiny_config(
        run, domain="code", harness=str(root / "harness"), generations=1, candidates=2, noise_reruns=0,
        selection_limit=4, test_limit=4, skills=[],
        code={"sources": ["humaneval"], "sandbox": TEST_SANDBOX, "train_size": 24, "selection_size": 6,
              "test_size": 6, "eval_max_new_tokens": 16},
    )
    res = meta_agent("evolve", "--config", str(config), data_dir=root / "data", timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return run


def test_the_run_finishes_with_a_summary_on_the_sealed_test_split(code_run: Path) -> None:
    assert (code_run / "summary.md").is_file()
    evolved = json.loads((code_run / "final" / "evolved-test.json").read_text())
    assert evolved["domain"] == "code" and evolved["split"] == "test" and evolved["score"]["n"] == 4


def test_the_report_shows_code_failure_modes_and_rewarded_probes(code_run: Path) -> None:
    report = json.loads((code_run / "gen-000" / "main" / "report.json").read_text())
    labels = {s["label"] for s in report["labels"]}
    assert "no_code_block" in labels, labels
    assert report["probes_rewarded"] and report["probes_rewarded"] > 0


def test_the_hardcoding_penalty_is_promoted_and_merged(code_run: Path) -> None:
    verdicts = journal(code_run, VerdictRecorded)
    penalty = next(v for v in verdicts if v["skills"] == ["hardcoded-output-penalty"])
    assert penalty["verdict"] == "promoted", penalty
    assert "hardcoding_penalty" in (code_run.parent / "harness" / "harness" / "code" / "rewards.py").read_text()
    merged = yaml.safe_load((code_run.parent / "harness" / "harness.yaml").read_text())
    assert merged["rewards"]["hardcoding_penalty"] == pytest.approx(1.0)
