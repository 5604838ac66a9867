"""A learned skill never silently shadows a skill of the same name from another library."""

from __future__ import annotations

import shutil
from pathlib import Path

from meta_agent.paths import seed_skills
from meta_agent.skills.model import SkillMeta
from meta_agent.skills.skill_files import write_skill_files
from tests.skills.libraries import layered, outcome


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


def test_a_revision_is_published_beside_the_skill_it_revises_which_stays_as_it_was(tmp_path: Path) -> None:
    seed = layered(tmp_path).get("clip-higher")
    folder = _learned(tmp_path, "clip-higher", "A revised upper clip bound.", revises="clip-higher")
    added = layered(tmp_path).add(folder)
    assert added.name == "clip-higher-2" and added.meta.provenance["revises"] == "clip-higher"
    again = layered(tmp_path)  # the next project
    assert again.get("clip-higher").path == seed.path and again.get("clip-higher").meta == seed.meta
    assert not (tmp_path / "user" / ".overlay" / "clip-higher.yaml").exists(), "nothing retires the seed skill"
    assert [s.name for s in again.all() if s.name.startswith("clip-higher")] == ["clip-higher", "clip-higher-2"]


def test_a_learned_skill_does_not_take_over_a_user_skill_by_claiming_its_origin(tmp_path: Path) -> None:
    """Provenance is the writer's claim; the origin `add` is given (the learning step that ran) decides."""
    mine = layered(tmp_path).add(_learned(tmp_path, "my-probe", "The user's own learned probe check."),
                                 origin={"run": "run-7", "candidate": "run-7/0-1", "run_dir": "/projects/a/run-7"})
    shutil.rmtree(tmp_path / "run")  # another project, whose run has the same name
    impostor = _learned(tmp_path, "my-probe", "An impostor claiming the same run and candidate.")
    added = layered(tmp_path).add(impostor, origin={"run": "run-7", "candidate": "run-7/0-1",
                                                    "run_dir": "/projects/b/run-7"})
    assert added.name == "my-probe-2"
    kept = layered(tmp_path).get("my-probe")
    assert kept.path == tmp_path / "user" / "my-probe" and kept.meta.description == mine.meta.description


def test_a_learned_skill_starts_without_the_evidence_it_brings_along(tmp_path: Path) -> None:
    folder = _learned(tmp_path, "new-probe", "A learned probe check with borrowed wins.")
    meta = SkillMeta(name="new-probe", description="A learned probe check with borrowed wins.",
                     evidence=[outcome(i, "math", "promoted") for i in range(3)])
    write_skill_files(folder, meta, "## How\nlearned\n")
    layered(tmp_path).add(folder)
    assert layered(tmp_path).get("new-probe").meta.evidence == []
