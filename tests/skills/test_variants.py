"""Parameter ranges: the skills proposer searches a skill's variants once its defaults were tested,
instead of stopping when every triggered skill was tried."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from meta_agent.agents.base import ProposalContext
from meta_agent.agents.skills_proposer import SkillsProposer
from meta_agent.journal import VerdictRecorded
from meta_agent.paths import seed_skills
from meta_agent.skills.model import SkillMeta
from meta_agent.skills.skill_files import write_skill_files
from meta_agent.skills.store import Library, SkillSet, load_skill
from meta_agent.skills.variants import key, variants
from tests.skills.test_library import _report


def _meta(**fields: Any) -> SkillMeta:
    return SkillMeta.model_validate({"name": "lr", "description": "a learning rate skill", **fields})


def test_variants_start_with_the_defaults_and_cover_the_range_once() -> None:
    meta = _meta(params={"learning_rate": 1e-4, "other": 1},
                 param_ranges={"learning_rate": [1.0e-4, 2e-4, 5e-5]})
    assert variants(meta) == [{"learning_rate": 1e-4, "other": 1}, {"learning_rate": 2e-4, "other": 1},
                              {"learning_rate": 5e-5, "other": 1}]
    assert key({"a": 0.0001}) == key({"a": 1.0e-4})


@pytest.mark.parametrize(("ranges", "says"), [
    ({"missing": [1, 2]}, "not one of the skill's params"),
    ({"learning_rate": []}, "give 1 to 8 values"),
    ({"learning_rate": list(range(9))}, "give 1 to 8 values"),
    ({"learning_rate": [1, 1]}, "listed twice"),
    ({"learning_rate": [{"nested": 1}]}, "learning_rate"),
])
def test_a_malformed_range_is_refused_with_its_reason(ranges: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        _meta(params={"learning_rate": 1e-4}, param_ranges=ranges)


def _library(root: Path, names: dict[str, str]) -> SkillSet:
    """Copies of the seed `learning-rate` skill under other names (`names`: name -> trigger metric)."""
    seed = load_skill(seed_skills() / "learning-rate")
    for name, metric in names.items():
        triggers = [{"metric": metric, "below": 0.02}]
        meta = SkillMeta.model_validate(seed.meta.model_dump() | {"name": name, "triggers": triggers})
        write_skill_files(root / name, meta, seed.body)
    return SkillSet(seed=Library.load(root))


def _propose(skills: SkillSet, history: list[VerdictRecorded], k: int = 2) -> list[tuple[str, dict[str, Any]]]:
    report = _report("math", {}, learning_gain=0.0)
    ctx = ProposalContext(run_id="r", generation=len(history), domain="math", report=report,
                          harness_dir=Path("/nonexistent"), skills=skills, seed=0, history=history)
    return [(h.skills_used[0], h.params) for h in SkillsProposer(skills).propose(ctx, k)]


def _verdict(skill: str, rate: float, verdict: Literal["promoted", "rejected", "conflict"], delta: float | None
             ) -> VerdictRecorded:
    return VerdictRecorded(cand_id="r/0-0", stage="gate", reason="", kind="performance", skills=[skill],
                           params={"learning_rate": rate}, verdict=verdict, delta=delta)


def test_an_untried_skill_is_proposed_with_its_defaults(tmp_path: Path) -> None:
    skills = _library(tmp_path, {"lr-a": "learning_gain"})
    assert _propose(skills, [], k=1) == [("lr-a", {"learning_rate": 1e-4})]


def test_after_the_defaults_the_neighbour_of_the_best_variant_comes_next(tmp_path: Path) -> None:
    skills = _library(tmp_path, {"lr-a": "learning_gain"})
    promoted = [_verdict("lr-a", 1e-4, "promoted", 0.1)]
    assert _propose(skills, promoted, k=1) == [("lr-a", {"learning_rate": 2e-4})]
    worse = [*promoted, _verdict("lr-a", 2e-4, "rejected", -0.05)]
    assert _propose(skills, worse, k=1) == [("lr-a", {"learning_rate": 5e-5})]
    every = [*worse, _verdict("lr-a", 5e-5, "rejected", 0.0)]
    assert _propose(skills, every, k=1) == [], "every variant tried: nothing is proposed twice"


def test_untried_skills_come_before_variants_and_the_more_promising_skill_first(tmp_path: Path) -> None:
    skills = _library(tmp_path, {"lr-a": "learning_gain", "lr-b": "learning_gain", "lr-c": "learning_gain"})
    history = [_verdict("lr-a", 1e-4, "rejected", -0.1), _verdict("lr-b", 1e-4, "rejected", 0.05)]
    proposed = _propose(skills, history, k=3)
    assert proposed[0] == ("lr-c", {"learning_rate": 1e-4}), "a fresh skill first"
    assert [name for name, _ in proposed[1:]] == ["lr-b", "lr-a"], "then the higher measured delta"
    assert all(params == {"learning_rate": 2e-4} for _, params in proposed[1:])


def test_a_conflict_is_not_a_test_of_the_variant(tmp_path: Path) -> None:
    skills = _library(tmp_path, {"lr-a": "learning_gain"})
    assert _propose(skills, [_verdict("lr-a", 1e-4, "conflict", 0.1)], k=1) == [("lr-a", {"learning_rate": 1e-4})]


def test_a_record_without_params_counts_as_the_defaults(tmp_path: Path) -> None:
    """Runs journaled before variants existed: their verdicts named only the skill."""
    skills = _library(tmp_path, {"lr-a": "learning_gain"})
    old = [VerdictRecorded.model_validate({"cand_id": "r/0-0", "stage": "gate", "reason": "", "kind": "performance",
                                           "skills": ["lr-a"], "verdict": "rejected", "delta": 0.0})]
    assert _propose(skills, old, k=1) == [("lr-a", {"learning_rate": 2e-4})]


def _seed_proposals(k: int, **metrics: float) -> list[tuple[str, str]]:
    """What the offline proposer picks from the seed library for a math report like the efficacy runs':
    all-zero groups, long truncated completions and a reward the verifier disagrees with."""
    report = _report("math", {"zero_variance_group": 0.7, "truncated": 0.6, "reward_verifier_disagreement": 0.1},
                     reward_mean=0.05, truncation_rate=0.7, probes_rewarded=0.5, **metrics)
    skills = SkillSet(seed=Library.load(seed_skills()))
    ctx = ProposalContext(run_id="r", generation=1, domain="math", report=report,
                          harness_dir=Path("/nonexistent"), skills=skills, seed=0, history=[])
    return [(h.skills_used[0], h.kind) for h in SkillsProposer(skills).propose(ctx, k)]


def test_when_training_does_not_move_the_policy_the_learning_rate_comes_right_after_validity() -> None:
    """The efficacy run's complaint: `learning-rate` fired every generation (noise floor 0) and was always
    outranked by performance skills whose deltas could only be 0 until it landed."""
    proposed = _seed_proposals(3, selection_noise=0.0)
    validity = [name for name, kind in proposed if kind == "validity"]
    assert len(validity) == 2 and proposed[2] == ("learning-rate", "performance"), proposed
    assert _seed_proposals(3, selection_noise=0.0)[:1] == proposed[:1], "deterministic for a seed"
    moved = [name for name, _ in _seed_proposals(6, selection_noise=0.1)]
    assert "learning-rate" not in moved and len(moved) == 6, "a policy that moves: no learning-rate change"
