"""The skill writer over HTTP: a promoted candidate becomes a valid, runnable skill; bad output becomes none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from meta_agent.agents.base import Outcome
from meta_agent.gitops import export_tree
from meta_agent.llm.transcript import read_events
from meta_agent.skills.runner import prepare_kit, run_apply
from meta_agent.skills.store import load_skill
from meta_agent.verdicts import Verdict
from sandboxes import Limits, Mount, Sandbox
from tests.llm.conftest import MathBench, make_proposer, strict_answer_hypothesis
from tests.llm.replay_server import ReplayServer

DIFF = "--- a/harness/math/rewards.py\n+++ b/harness/math/rewards.py\n@@ -1 +1 @@\n-old\n+new\n"


def outcome(tmp_path: Path, title: str = "Reward only one explicit final answer line", diff: str = DIFF) -> Outcome:
    h = strict_answer_hypothesis().model_copy(update={"title": title})
    return Outcome(run_id="run", generation=0, domain="math", hypothesis=h, diff=diff,
                   verdict=Verdict(cand_id="run/0-0", verdict="promoted", stage="gate", kind="validity",
                                   reason="validity change: takes reward from 4 rollouts the verifier rejects"),
                   skills_dir=tmp_path / "run" / "skills")


def test_a_promoted_candidate_becomes_a_skill_that_loads_and_applies(
        serve: Callable[..., ReplayServer], math_bench: MathBench, sandbox: Sandbox, tmp_path: Path) -> None:
    server = serve("skill_writer")
    proposer = make_proposer(server, tmp_path / "run")
    folder = proposer.learn(outcome(tmp_path))
    assert server.errors == []
    assert folder == tmp_path / "run" / "skills" / "probe-regression-tests"
    skill = load_skill(folder)
    assert skill.meta.kind == "validity" and skill.meta.domains == ["math"]
    assert skill.meta.provenance == {"source": "llm", "run": "run", "candidate": "run/0-0", "verdict": "promoted"}
    assert [t.metric for t in skill.meta.triggers] == ["probes_rewarded"]
    assert "## Pitfalls" in skill.body and "run/0-0: promoted at gate" in skill.body
    assert proposer.skills.add(folder).name == "probe-regression-tests"

    work = export_tree(math_bench.repo, math_bench.main, tmp_path / "apply-work")
    kit = prepare_kit(tmp_path / "kit")
    with sandbox.open(work, mounts=[Mount(kit), Mount(folder)], limits=Limits(timeout_s=120)) as session:
        applied = run_apply(session, kit, skill, work, {})
    assert applied.ok, applied.reason
    assert "def test_sprayed_numbers_are_not_rewarded" in (work / "tests" / "test_math.py").read_text()


def test_an_invalid_skill_twice_yields_none_and_the_reason_is_in_the_transcript(
        serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("skill_writer")
    assert make_proposer(server, tmp_path / "run").learn(outcome(tmp_path, title="Bad skill source")) is None
    assert len(server.requests) == 2
    end = list(read_events(tmp_path / "run" / "transcripts" / "g0-c0-skill-writer.jsonl"))[-1]
    assert not end["ok"] and "must define a top-level `def apply(harness_dir, params)`" in end["outcome"]
    assert not (tmp_path / "run" / "skills" / "bad-skill").exists()


def test_a_candidate_without_a_diff_costs_no_call(serve: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = serve("skill_writer")
    assert make_proposer(server, tmp_path / "run").learn(outcome(tmp_path, diff="")) is None
    assert server.requests == []
