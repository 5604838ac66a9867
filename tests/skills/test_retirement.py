"""Retirement is per domain and per library, and a harness that already had the change is no loss."""

from __future__ import annotations

from pathlib import Path

from meta_agent.backtest.gate import decide
from meta_agent.config import GateSettings
from meta_agent.skills.evidence import evidence_verdict, record
from meta_agent.skills.retrieve import rank
from meta_agent.verdicts import StageResult
from sandboxes import Sandbox
from tests.skills.libraries import apply_twice, layered, outcome
from tests.skills.test_library import _report


def test_a_skill_retired_in_math_stays_active_for_code_and_swe(tmp_path: Path) -> None:
    skills = layered(tmp_path)
    retired = [record(skills, "clip-higher", outcome(i, "math"), retire_after=3) for i in range(3)]
    assert retired == [False, False, True]
    reloaded = layered(tmp_path)  # the next project, same user library
    meta = reloaded.get("clip-higher").meta
    assert not meta.active_in("math")
    assert meta.active_in("code") and meta.active_in("swe")
    entropy = {"entropy_change": -0.3}
    assert "clip-higher" not in [r.skill.name for r in rank(reloaded, _report("math", {}, **entropy))]
    assert "clip-higher" in [r.skill.name for r in rank(reloaded, _report("code", {}, **entropy))]
    someone_else = layered(tmp_path / "someone-else")  # retirement lives in the library that recorded it
    assert someone_else.get("clip-higher").meta.active_in("math")


def test_the_same_evidence_recorded_again_after_a_kill_gives_the_same_answer(tmp_path: Path) -> None:
    """A kill after the skill file was saved and before the step's journal line: the redo records the same
    evidence again and must report the retirement it caused, not `retired: []`."""
    skills = layered(tmp_path)
    first = [record(skills, "clip-higher", outcome(i, "math"), retire_after=3) for i in range(3)]
    redo = record(layered(tmp_path), "clip-higher", outcome(2, "math"), retire_after=3)
    assert first[-1] is True and redo is True
    assert record(layered(tmp_path), "clip-higher", outcome(1, "math"), retire_after=3) is False
    assert len(layered(tmp_path).get("clip-higher").meta.evidence) == 3, "recorded once"


def test_losses_in_different_domains_do_not_add_up(tmp_path: Path) -> None:
    skills = layered(tmp_path)
    for i, domain in enumerate(["math", "code", "swe", "math", "code"]):
        assert not record(skills, "clip-higher", outcome(i, domain), retire_after=3)
    assert all(layered(tmp_path).get("clip-higher").meta.active_in(d) for d in ("math", "code", "swe"))


def test_a_reapplied_skill_counts_as_not_applicable_never_as_a_loss(sandbox: Sandbox, tmp_path: Path) -> None:
    first, again, _work = apply_twice(sandbox, tmp_path, "dynamic-sampling")
    assert first.ok
    stages = [StageResult(stage="implement", passed=again.ok, reason=again.reason)]
    verdict = decide("r/0-0", "performance", stages, 0.0, GateSettings())
    assert evidence_verdict(verdict) == "not_applicable"

    skills = layered(tmp_path)
    for i in range(4):
        assert not record(skills, "dynamic-sampling", outcome(i, "math", evidence_verdict(verdict)), retire_after=3)
    meta = layered(tmp_path).get("dynamic-sampling").meta
    assert meta.active_in("math") and meta.record("math") == (0, 0)
