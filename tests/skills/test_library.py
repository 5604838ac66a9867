"""The skills library: broken skills are skipped, retrieval follows the report, export/import keeps evidence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from meta_agent.paths import seed_skills
from meta_agent.report.rollout_report import LabelStat, RolloutReport
from meta_agent.skills.model import Evidence
from meta_agent.skills.retrieve import rank, render_for_prompt
from meta_agent.skills.store import Library, SkillSet
from meta_agent.skills.transfer import export_library, import_library


def _seed() -> Library:
    return Library.load(seed_skills(), writable=False)


def test_a_malformed_skill_is_reported_and_skipped(tmp_path: Path) -> None:
    shutil.copytree(seed_skills() / "clip-higher", tmp_path / "clip-higher")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("---\nname: broken\ndescription: short\n---\nbody\n")
    (tmp_path / "no-front-matter").mkdir()
    (tmp_path / "no-front-matter" / "SKILL.md").write_text("just text\n")
    lib = Library.load(tmp_path)
    assert list(lib.skills) == ["clip-higher"]
    assert any("broken/SKILL.md: field description" in p for p in lib.problems)
    assert any("no-front-matter/SKILL.md: must start with YAML front matter" in p for p in lib.problems)


def _report(domain: str, dominant: dict[str, float], **metrics: float) -> RolloutReport:
    labels = [LabelStat(label=k, count=int(100 * v), share=v, exemplars=[]) for k, v in dominant.items()]
    fields: dict[str, object] = dict(
        domain=domain, harness_commit="x", policy="p", steps=1, rollouts=100, groups=25, reward_mean=0.5,
        reward_components={}, verified_rate=None, reward_verifier_agreement=None, truncation_rate=0.0,
        zero_variance_groups=0, zero_variance_frac=0.0, mean_completion_tokens=10, total_tokens=1000,
        train_wall_time=1.0, entropy_change=None, curves=[], labels=labels, dominant=list(dominant),
        by_difficulty=[])
    fields.update(metrics)
    return RolloutReport.model_validate(fields)


@pytest.mark.parametrize(
    ("domain", "dominant", "expected"),
    [
        ("math", {"repetition": 0.8}, "repetition-penalty"),
        ("math", {"format_violation": 0.9, "answer_not_extractable": 0.7}, "format-reward"),
        ("swe", {"tests_edited": 0.3}, "swe-test-tampering-penalty"),
        ("swe", {"no_command": 0.9}, "swe-command-format-shaping"),
    ],
)
def test_retrieval_puts_the_skill_whose_trigger_dominates_the_report_first(
    domain: str, dominant: dict[str, float], expected: str
) -> None:
    ranked = rank(SkillSet(seed=_seed()), _report(domain, dominant))
    assert ranked[0].skill.name == expected
    assert ranked[0].matched, "the reason it ranks first is a matched trigger"
    prompt = render_for_prompt(ranked, budget_tokens=400)
    assert expected in prompt and len(prompt) // 4 <= 400


def _with_evidence(root: Path) -> SkillSet:
    skills = SkillSet(seed=_seed(), user=Library.load(root / "user"))
    for i, verdict in enumerate(["promoted", "rejected"]):
        ev = Evidence(run=f"run-{i}", harness_repo="/h", commit=f"c{i}", domain="math", metric="selection_delta",
                      delta=0.1 - i * 0.2, ci=[0.01, 0.2], verdict=verdict, stage="gate", date=f"2026-11-0{i + 1}")
        skill = skills.get("dynamic-sampling")
        skill.meta.evidence.append(ev)
        skills.save(skill)
    return skills


@pytest.mark.parametrize("target", ["skills.tar.gz", "skills-repo"])
def test_export_then_import_into_an_empty_library_keeps_the_evidence(tmp_path: Path, target: str) -> None:
    source = _with_evidence(tmp_path / "a")
    export_library(source.all(), tmp_path / target)
    empty = Library(root=tmp_path / "b" / "user")
    fresh = SkillSet(seed=Library(root=tmp_path / "b" / "seed", writable=False), user=empty)
    report = import_library(tmp_path / target, fresh)
    assert sorted(report.added) == sorted(s.name for s in source.all())
    imported = Library.load(tmp_path / "b" / "user").skills["dynamic-sampling"]
    assert [e.model_dump() for e in imported.meta.evidence] == \
        [e.model_dump() for e in source.get("dynamic-sampling").meta.evidence]
    assert (tmp_path / "b" / "user" / "dynamic-sampling" / "apply.py").is_file()


def test_importing_a_skill_you_already_have_merges_its_evidence_once(tmp_path: Path) -> None:
    source = _with_evidence(tmp_path / "a")
    export_library([source.get("dynamic-sampling")], tmp_path / "one.tar.gz")
    mine = SkillSet(seed=_seed(), user=Library.load(tmp_path / "b"))
    assert import_library(tmp_path / "one.tar.gz", mine).merged == {"dynamic-sampling": 2}
    assert import_library(tmp_path / "one.tar.gz", mine).merged == {"dynamic-sampling": 0}
    again = SkillSet(seed=_seed(), user=Library.load(tmp_path / "b"))
    assert len(again.get("dynamic-sampling").meta.evidence) == 2
    assert not (tmp_path / "b" / "dynamic-sampling").exists(), "a seed skill's evidence lives in the overlay"


def test_a_skill_that_keeps_losing_retires_and_can_come_back(tmp_path: Path) -> None:
    from meta_agent.skills.evidence import record, set_status

    skills = SkillSet(seed=_seed(), user=Library.load(tmp_path / "user"))
    retired = []
    for i in range(3):
        ev = Evidence(run="r", harness_repo="/h", commit=f"c{i}", domain="math", metric="selection_delta",
                      verdict="rejected", stage="gate", date="2026-11-22")
        retired.append(record(skills, "clip-higher", ev, retire_after=3))
    assert retired == [False, False, True]
    reloaded = SkillSet(seed=_seed(), user=Library.load(tmp_path / "user"))
    assert not reloaded.get("clip-higher").meta.active_in("math")
    set_status(reloaded, "clip-higher", retired=False, domain="math")
    assert SkillSet(seed=_seed(), user=Library.load(tmp_path / "user")).get("clip-higher").meta.active_in("math")
