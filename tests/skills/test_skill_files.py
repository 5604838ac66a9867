"""Skills in the Agent Skills format: SKILL.md holds only the keys that format allows, meta-agent's own
fields live in skill.yaml beside it, the older one-file layout still loads, and `skills validate` says
what is wrong with a folder, naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.paths import seed_skills
from meta_agent.skills.skill_files import SPEC_FIELDS, agent_skills_problems, meta_agent_problems, split_front_matter
from meta_agent.skills.store import load_skill, save_skill

runner = CliRunner()


def _front(folder: Path) -> dict:
    md = folder / "SKILL.md"
    return yaml.safe_load(split_front_matter(md.read_text(), md)[0])


def test_every_shipped_skill_is_a_valid_agent_skill_and_a_valid_meta_agent_skill() -> None:
    folders = [p for p in seed_skills().iterdir() if p.is_dir()]
    assert len(folders) >= 10
    for folder in folders:
        assert agent_skills_problems(folder) == [] and meta_agent_problems(folder) == [], folder.name
        assert set(_front(folder)) <= set(SPEC_FIELDS)


def test_an_old_one_file_skill_loads_is_reported_and_is_rewritten_in_the_new_layout_when_saved(tmp_path: Path) -> None:
    folder = tmp_path / "legacy-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: legacy-skill\ndescription: An old skill with all its fields --- in the front matter.\n"
        "kind: validity\ndomains: [math]\nparams: {cap: 3}\n---\n\n## How\nDo it.\n")
    skill = load_skill(folder)
    assert skill.meta.kind == "validity" and skill.meta.params == {"cap": 3} and "---" in skill.meta.description
    assert any("unexpected fields in front matter: domains, kind, params" in p for p in agent_skills_problems(folder))
    save_skill(skill)
    assert agent_skills_problems(folder) == [] and set(_front(folder)) == {"name", "description", "metadata"}
    again = load_skill(folder)
    assert again.meta == skill.meta and again.body == skill.body


def test_validate_passes_a_good_library_and_names_each_problem_in_a_bad_one(tmp_path: Path) -> None:
    good = runner.invoke(app, ["skills", "validate", str(seed_skills())])
    assert good.exit_code == 0, good.output
    assert "skills valid" in good.output
    lib = tmp_path / "lib"
    shutil.copytree(seed_skills() / "clip-higher", lib / "a--b")
    shutil.copytree(seed_skills() / "clip-higher", lib / "long-words")
    md = lib / "long-words" / "SKILL.md"
    md.write_text(md.read_text().replace("name: clip-higher", "name: long-words").replace(
        "metadata:\n  meta-agent: skill.yaml", "metadata:\n  meta-agent: [not, a, string]\nextra: 1"))
    (lib / "long-words" / "apply.py").write_text("def run(harness_dir):\n    return 'no'\n")
    bad = runner.invoke(app, ["skills", "validate", str(lib)])
    assert bad.exit_code == 1
    out = " ".join(bad.output.split())
    assert "0 of 2 skills valid" in out
    assert "name 'clip-higher' differs from its folder name 'a--b'" in out
    assert "unexpected fields in front matter: extra" in out and "metadata must map strings to strings" in out
    assert "apply.py: apply_py must define a top-level `def apply(harness_dir, params)`" in out


def test_validate_on_something_that_is_not_a_skill_is_one_clear_line(tmp_path: Path) -> None:
    res = runner.invoke(app, ["skills", "validate", str(tmp_path / "missing")])
    out = " ".join(res.output.split())
    assert res.exit_code == 1 and "is not a folder" in out and "Traceback" not in out
