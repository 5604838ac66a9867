"""A learned skill never silently shadows a skill of the same name from another library."""

from __future__ import annotations

from pathlib import Path

from meta_agent.paths import seed_skills
from meta_agent.skills.model import SkillMeta
from meta_agent.skills.skill_files import write_skill_files
from tests.skills.libraries import layered


def _learned(root: Path, name: str, description: str, **provenance: str) -> Path:
    folder = root / "run" / "skills" / name
    folder.mkdir(parents=True)
    meta = SkillMeta(name=name, description=description,
                     provenance={"source": "llm", "run": "run-7", "candidate": "run-7/0-1", **provenance})
    write_skill_files(folder, meta, "## How\nlearned\n")
    return folder


def test_a_learned_skill_with_a_seed_name_is_renamed_instead_of_shadowing_it(tmp_path: Path) -> None:
    added = layered(tmp_path).add(_learned(tmp_path, "clip-higher", "A learned take on the upper clip bound."))
    assert added.name == "clip-higher-2"
    again = layered(tmp_path)  # the next project
    assert again.get("clip-higher").path == seed_skills() / "clip-higher"
    assert again.get("clip-higher-2").meta.description == "A learned take on the upper clip bound."


def test_publishing_the_same_learned_skill_again_after_a_crash_makes_no_second_copy(tmp_path: Path) -> None:
    layered(tmp_path).add(_learned(tmp_path, "clip-higher", "A learned take on the upper clip bound."))
    (tmp_path / "run" / "skills" / "clip-higher-2").rename(tmp_path / "run" / "skills" / ".lost")
    skills = layered(tmp_path)
    assert skills.add(_learned(tmp_path, "clip-higher", "A learned take on the upper clip bound.")).name == \
        "clip-higher-2"
    assert not any(s.name == "clip-higher-3" for s in layered(tmp_path).all())


def test_a_revision_takes_the_name_and_keeps_the_previous_version(tmp_path: Path) -> None:
    seed_description = layered(tmp_path).get("clip-higher").meta.description
    added = layered(tmp_path).add(_learned(tmp_path, "clip-higher", "A revised upper clip bound.",
                                           revises="clip-higher"))
    assert added.name == "clip-higher"
    again = layered(tmp_path)
    assert again.get("clip-higher").meta.description == "A revised upper clip bound."
    kept = again.get("clip-higher-v1").meta
    assert kept.description == seed_description and kept.status == "retired"
