"""On the tiny policy: a run whose only skill is `learning-rate` tries its default in generation 0 and,
with nothing untried left, the next value of its range in generation 1, instead of proposing nothing."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
import yaml

from meta_agent.journal import VerdictRecorded
from meta_agent.paths import seed_skills
from meta_agent.skills.evidence import set_status
from meta_agent.skills.store import default_skill_set
from tests.conftest import journal
from tests.evolve.conftest import meta_agent, tiny_config

pytestmark = pytest.mark.slow


def only(skill: str, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Retire every other seed skill in math, in the user library under `data` (as `skills retire` does)."""
    monkeypatch.setenv("META_AGENT_DATA", str(data))
    skills = default_skill_set()
    for folder in seed_skills().iterdir():
        if (folder / "SKILL.md").is_file() and folder.name != skill:
            set_status(skills, folder.name, retired=True, domain="math")


def test_the_second_generation_searches_the_range_of_the_skill_the_first_tried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, run = tmp_path / "data", tmp_path / "run"
    only("learning-rate", data, monkeypatch)
    config = tiny_config(run, generations=2, candidates=1, train_steps=2, noise_reruns=0, control="none", skills=[])
    res = meta_agent("evolve", "--config", str(config), data_dir=data)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    verdicts = journal(run, VerdictRecorded)
    assert [(v["skills"], v["params"]) for v in verdicts] == [
        (["learning-rate"], {"learning_rate": 1e-4}), (["learning-rate"], {"learning_rate": 2e-4})]
    assert "learning_rate=0.0002" in str(verdicts[1]["title"])
    repo = git.Repo(run / "harness")
    branch = next(b for b in repo.branches if b.name.startswith("cand/") and "/1-0" in b.name)
    harness = yaml.safe_load(repo.git.show(f"{branch.commit.hexsha}:harness.yaml"))
    assert harness["rl"]["learning_rate"] == pytest.approx(2e-4), "the candidate's harness holds the variant"
    evidence = default_skill_set().get("learning-rate").meta.evidence
    assert [e.params for e in evidence] == [{"learning_rate": 1e-4}, {"learning_rate": 2e-4}], \
        "each variant's test is recorded on the skill with its parameters"
