"""`meta-agent evolve --domain swe` end to end on the tiny policy: the reward hole the probes expose is
closed by a promoted validity change, and a candidate that makes the reward more hackable is rejected."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from meta_agent.gitops import is_merged
from meta_agent.journal import CandidateCreated, VerdictRecorded
from tests.conftest import journal
from tests.evolve.conftest import meta_agent, tiny_config

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`

HERE = Path(__file__).parent


def test_evolve_swe_promotes_the_tamper_fix_and_rejects_a_hackable_reward(calc_taskset: str, tmp_path: Path) -> None:
    run = tmp_path / "swe-run"
    config = tiny_config(
        run, domain="swe", generations=1, candidates=2, train_steps=1, noise_reruns=0,
        swe={"taskset": calc_taskset, "train_size": 6, "selection_size": 2, "test_size": 2, "sandbox": "bwrap",
             "scaffold": {"max_turns": 2, "turn_tokens": 16}},
        skills=[str(HERE / "skills")],
    )
    res = meta_agent("evolve", "--config", str(config), data_dir=tmp_path / "data", timeout=1500)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    report = json.loads((run / "gen-000" / "main" / "report.json").read_text())
    assert report["domain"] == "swe" and report["probes_rewarded"] == 1.0, "the default harness pays for tampering"
    assert "turn_cap_reached" in report["dominant"] or "no_command" in report["dominant"]
    verdicts = {tuple(v["skills"]): v for v in journal(run, VerdictRecorded)}
    fix = verdicts[("swe-test-tampering-penalty",)]
    assert fix["verdict"] == "promoted" and fix["kind"] == "validity"
    hack = verdicts[("reward-test-edits",)]
    assert hack["verdict"] == "rejected" and hack["stage"] == "replay"
    assert "hacking probes" in hack["reason"]
    repo = git.Repo(run / "harness")
    created = {c["skills"][0]: c for c in journal(run, CandidateCreated)}
    assert is_merged(repo, created["swe-test-tampering-penalty"]["commit"])
    assert not is_merged(repo, created["reward-test-edits"]["commit"])
    summary = json.loads((run / "summary.json").read_text())
    assert {"evolved", "static", "paired"} <= summary["final"].keys()
    # how far each policy got, where none resolves: counted from the saved test evaluations
    for arm in ("evolved", "static"):
        saved = json.loads((run / "final" / f"{arm}-test.json").read_text())["results"]
        assert summary["final"]["diffs"][arm] == sum(1 for r in saved if r["answer"].strip())
    assert summary["final"]["tasks"] == 2
    assert "test episodes that left a diff (resolved or not): evolved " in (run / "summary.md").read_text()
