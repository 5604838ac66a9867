"""End to end: `meta-agent evolve --proposer llm --coder claude-code` on the tiny policy.

The diagnostician and skill writer are meta-agent's own agents, the coder is the real Claude Code
binary, all against recorded sessions. Its candidate goes through the whole cascade and is merged;
the one it cannot implement fails with its own words, and the run goes on."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from meta_agent.gitops import trailers
from meta_agent.journal import EVENT_TYPES
from tests.conftest import journal
from tests.evolve.conftest import meta_agent
from tests.llm.conftest import CONVERSATIONS
from tests.llm.replay_server import ReplayServer, Scenario
from tests.llm.test_evolve_llm import llm_config

pytestmark = pytest.mark.slow  # trains a model and runs a whole loop


def test_a_claude_code_candidate_is_backtested_and_merged(tmp_path: Path, replay_server: ReplayServer) -> None:
    run_dir = tmp_path / "cc"
    replay_server.load(Scenario.load(*(CONVERSATIONS / f"{n}.yaml" for n in (
        "e2e_diagnosis", "claude_code_strict_answer", "claude_code_protected", "skill_writer"))))
    config = llm_config(run_dir, replay_server)
    res = meta_agent("evolve", "--config", str(config), "--coder", "claude-code",
                     "--coder-model", "anthropic/claude-sonnet-4-5", "--coder-api-base", replay_server.origin,
                     data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert replay_server.errors == []

    repo = git.Repo(run_dir / "harness")
    [merged] = journal(run_dir, EVENT_TYPES["merged"])
    assert trailers(repo, merged["merge_commit"])["Backtest"] == "implement=pass static=pass replay=pass train=pass"
    created = {c["k"]: c for c in journal(run_dir, EVENT_TYPES["candidate_created"])}
    assert "(claude-code coder)" in repo.commit(created[0]["commit"]).message
    assert "exactly one distinct" not in repo.git.show("main:harness/math/rewards.py"), "its own code, not ours"
    assert "len(stated) != 1" in repo.git.show("main:harness/math/rewards.py")
    verdicts = {v["title"]: v for v in journal(run_dir, EVENT_TYPES["verdict"])}
    loser = verdicts["Log the verifier verdict beside each rollout"]
    assert loser["verdict"] == "rejected" and loser["stage"] == "implement"
    assert loser["reason"].startswith("the implementation changed nothing") and "protected" in loser["reason"]
    usage = json.loads((run_dir / "llm-usage.json").read_text())
    assert usage["by_agent"]["coder"]["calls"] == 6 and usage["by_agent"]["diagnostician"]["calls"] >= 1
    assert (run_dir / "transcripts" / "g0-c0-coder-claude-code.jsonl").is_file()
