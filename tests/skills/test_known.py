"""A variant an earlier run measured and rejected under the exact same conditions is not proposed again
(the second `make demo` re-trained the first one's rejected warm-start recipe for 14 minutes)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from meta_agent.agents.base import ProposalContext
from meta_agent.agents.skills_proposer import SkillsProposer
from meta_agent.paths import seed_skills
from meta_agent.skills.evidence import record
from meta_agent.skills.known import KnownRejection, known_rejections, skill_digest
from meta_agent.skills.model import Evidence
from meta_agent.skills.store import Library, SkillSet
from tests.skills.test_library import _report
from tests.skills.test_variants import _library


def _user(folder: Path) -> SkillSet:
    """The skills of `folder` as the user's own library (where their evidence is written), over the seed one."""
    return SkillSet(seed=Library.load(seed_skills(), writable=False), user=Library.load(folder))


def _evidence(skills: SkillSet, name: str, **fields: Any) -> Evidence:
    base = dict(run="run-1", harness_repo="/h", commit="c1", domain="math", metric="selection_delta", delta=0.0,
                ci=[0.0, 0.0], verdict="rejected", stage="gate", date="2026-11-29",
                params={"learning_rate": 1e-4}, conditions="cond-a", skill_digest=skill_digest(skills.get(name)))
    return Evidence.model_validate(base | fields)


def test_a_skills_digest_ignores_its_evidence_and_follows_its_code(tmp_path: Path) -> None:
    shutil.copytree(seed_skills() / "learning-rate", tmp_path / "lib" / "learning-rate")
    skills = _user(tmp_path / "lib")
    before = skill_digest(skills.get("learning-rate"))
    record(skills, "learning-rate", _evidence(skills, "learning-rate"), retire_after=3)
    reloaded = _user(tmp_path / "lib")
    assert reloaded.get("learning-rate").meta.evidence, "the evidence was saved with the skill"
    assert skill_digest(reloaded.get("learning-rate")) == before, "new evidence is not a new skill"
    apply_py = tmp_path / "lib" / "learning-rate" / "apply.py"
    apply_py.write_text(apply_py.read_text() + "\n# edited\n")
    assert skill_digest(_user(tmp_path / "lib").get("learning-rate")) != before


@pytest.mark.parametrize(("change", "matches"), [
    ({}, True),
    ({"conditions": "cond-b"}, False),      # another main, policy, setting or task set
    ({"conditions": ""}, False),            # evidence from before conditions were recorded
    ({"domain": "code"}, False),
    ({"run": "this-run"}, False),           # this run's own verdicts are its history already
    ({"verdict": "promoted"}, False),       # a win is backtested again, never skipped
    ({"verdict": "not_applicable"}, False),
    ({"stage": "train"}, False),            # stopped before it was measured: a crash or timeout can do that
    ({"stage": "confirm"}, True),
    ({"skill_digest": "an-older-version"}, False),
])
def test_only_a_measured_rejection_under_the_same_conditions_and_code_is_known(
        tmp_path: Path, change: dict[str, Any], matches: bool) -> None:
    skills = _user(_library(tmp_path, {"lr-a": "learning_gain"}).seed.root)
    record(skills, "lr-a", _evidence(skills, "lr-a", **change), retire_after=3)
    known = known_rejections(skills, "math", "cond-a", run_id="this-run")
    assert [k.skill for k in known] == (["lr-a"] if matches else [])
    assert known_rejections(skills, "math", "", run_id="this-run") == [], "undigested conditions match nothing"


def _propose(skills: SkillSet, known: list[KnownRejection], k: int) -> list[tuple[list[str], dict[str, Any]]]:
    ctx = ProposalContext(run_id="this-run", generation=0, domain="math", report=_report("math", {}, learning_gain=0.0),
                          harness_dir=Path("/nonexistent"), skills=skills, seed=0, known=known)
    return [(h.skills_used, h.params) for h in SkillsProposer(skills).propose(ctx, k)]


def test_a_known_rejection_moves_the_search_on_to_what_is_not_yet_measured(tmp_path: Path) -> None:
    skills = _user(_library(tmp_path, {"lr-a": "learning_gain", "lr-b": "learning_gain"}).seed.root)
    fresh = _propose(skills, [], k=1)
    first = fresh[0][0][0]
    other = "lr-b" if first == "lr-a" else "lr-a"
    record(skills, first, _evidence(skills, first), retire_after=3)
    known = known_rejections(skills, "math", "cond-a", run_id="this-run")
    assert _propose(skills, known, k=1) == [([other], {"learning_rate": 1e-4})], "the untried skill instead"
    record(skills, other, _evidence(skills, other), retire_after=3)
    follow_ups = _propose(skills, known_rejections(skills, "math", "cond-a", run_id="this-run"), k=2)
    assert follow_ups and all(params == {"learning_rate": 2e-4} for _, params in follow_ups), \
        "then the next variant of each, never the rejected defaults again"


def test_a_rejected_recipe_counts_for_each_member_and_is_not_proposed_again() -> None:
    """The demo's case: the training settings tried together as one recipe, rejected at a delta of 0."""
    report = _report("math", {"zero_variance_group": 0.7, "truncated": 0.6}, reward_mean=0.05, truncation_rate=0.7,
                     selection_noise=0.0)
    skills = SkillSet(seed=Library.load(seed_skills()))
    ctx = ProposalContext(run_id="this-run", generation=0, domain="math", report=report,
                          harness_dir=Path("/nonexistent"), skills=skills, seed=0)
    recipe = next(h for h in SkillsProposer(skills).propose(ctx, 4) if len(h.skills_used) > 1)
    known = [KnownRejection(name, _evidence(skills, name, params=recipe.params[name]))
             for name in recipe.skills_used]
    ctx.known = known
    again = SkillsProposer(skills).propose(ctx, 4)
    assert not any(h.skills_used == recipe.skills_used for h in again)
    for h in again:
        for name in set(h.skills_used) & set(recipe.skills_used):
            assert h.params != recipe.params[name], f"{name} proposed again with the rejected parameters"
