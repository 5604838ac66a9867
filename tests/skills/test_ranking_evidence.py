"""Ranking heeds a skill's record in the report's domain beside its triggers and text."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_agent.paths import seed_skills
from meta_agent.skills.retrieve import rank
from meta_agent.skills.skill_files import write_skill_files
from meta_agent.skills.store import Library, SkillSet, load_skill
from tests.skills.libraries import outcome
from tests.skills.test_library import _report


def _twin(root: Path, name: str, wins: int, losses: int, domain: str = "math") -> None:
    """A copy of repetition-penalty under another name with a given record."""
    seed = load_skill(seed_skills() / "repetition-penalty")
    evidence = [outcome(i, domain, "promoted") for i in range(wins)] + [outcome(wins + i, domain)
                                                                         for i in range(losses)]
    meta = seed.meta.model_copy(update={"name": name, "evidence": evidence})
    (root / name).mkdir(parents=True)
    write_skill_files(root / name, meta, seed.body)


@pytest.mark.parametrize(("winner", "loser"), [("rep-a", "rep-b"), ("rep-b", "rep-a")])
def test_of_two_equally_triggered_skills_the_one_that_kept_winning_ranks_first(
        tmp_path: Path, winner: str, loser: str) -> None:
    _twin(tmp_path / "lib", winner, wins=3, losses=0)
    _twin(tmp_path / "lib", loser, wins=0, losses=2)
    ranked = rank(SkillSet(seed=Library.load(tmp_path / "lib")), _report("math", {"repetition": 0.8}))
    assert [r.skill.name for r in ranked] == [winner, loser]
    assert ranked[0].trigger_score == ranked[1].trigger_score


def test_a_record_in_another_domain_does_not_reorder(tmp_path: Path) -> None:
    _twin(tmp_path / "lib", "rep-a", wins=0, losses=0)
    _twin(tmp_path / "lib", "rep-b", wins=3, losses=0, domain="code")
    ranked = rank(SkillSet(seed=Library.load(tmp_path / "lib")), _report("math", {"repetition": 0.8}))
    assert [r.skill.name for r in ranked] == ["rep-a", "rep-b"]
