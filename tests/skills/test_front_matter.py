"""SKILL.md front matter is read by its fence lines only, and a skill name follows the Agent Skills rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_agent.skills.store import SkillError, parse_skill_md


def test_a_description_containing_three_dashes_parses(tmp_path: Path) -> None:
    text = ('---\nname: dash-skill\ndescription: "Use it when answers run on --- and on, past the limit."\n---\n\n'
            "## When\nBefore\n\n---\n\nafter a horizontal rule.\n")
    meta, body = parse_skill_md(text, tmp_path / "SKILL.md")
    assert meta.description == "Use it when answers run on --- and on, past the limit."
    assert "---\n\nafter a horizontal rule." in body


def test_an_unclosed_front_matter_is_reported(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="not closed"):
        parse_skill_md("---\nname: open-skill\ndescription: never closed --- at all\n", tmp_path / "SKILL.md")


@pytest.mark.parametrize("name", ["a--b", "trailing-", "-leading", "Upper", "a_b"])
def test_a_skill_name_outside_the_pattern_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="field name"):
        parse_skill_md(f"---\nname: {name}\ndescription: a description long enough\n---\nbody\n",
                       tmp_path / "SKILL.md")


@pytest.mark.parametrize("name", ["ab", "clip-higher", "swe-test-tampering-penalty", "a1-b2"])
def test_a_well_formed_name_is_accepted(name: str, tmp_path: Path) -> None:
    meta, _ = parse_skill_md(f"---\nname: {name}\ndescription: a description long enough\n---\nbody\n",
                             tmp_path / "SKILL.md")
    assert meta.name == name
