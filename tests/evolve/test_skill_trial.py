"""A learned skill reaches the user library only after its apply.py worked on a fresh harness of its domain
in the sandbox and the result passed the static stage (selftest included)."""

from __future__ import annotations

import shutil
from pathlib import Path

from meta_agent.evolve.skill_trial import trial
from meta_agent.paths import seed_skills
from meta_agent.skills.runner import prepare_kit
from meta_agent.skills.store import load_skill
from sandboxes import Limits, Sandbox

FAILING_TEST = '''
from pathlib import Path

import skillkit


def apply(harness_dir: Path, params: dict) -> str:
    text = skillkit.read(harness_dir, "tests/test_math.py")
    skillkit.write(harness_dir, "tests/test_math.py", text + "\\n\\ndef test_only_true_on_my_harness():\\n"
                   "    assert False, 'this harness lacks the fix the skill silently relies on'\\n")
    return "added a test"
'''


def _learned(tmp_path: Path, apply_py: str) -> Path:
    folder = tmp_path / "skills" / "relies-on-its-run"
    shutil.copytree(seed_skills() / "strict-final-answer", folder)
    md = folder / "SKILL.md"
    md.write_text(md.read_text().replace("name: strict-final-answer", "name: relies-on-its-run"))
    (folder / "apply.py").write_text(apply_py)
    return folder


def _trial(folder: Path, sandbox: Sandbox, tmp_path: Path) -> str | None:
    return trial(load_skill(folder), "math", sandbox=sandbox, limits=Limits(timeout_s=300),
                 kit_dir=prepare_kit(tmp_path / "kit"), work=tmp_path / "trial")


def test_a_skill_that_works_on_a_fresh_harness_passes(sandbox: Sandbox, tmp_path: Path) -> None:
    assert _trial(seed_skills() / "strict-final-answer", sandbox, tmp_path) is None


def test_a_skill_whose_change_fails_selftest_on_a_fresh_harness_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    reason = _trial(_learned(tmp_path, FAILING_TEST), sandbox, tmp_path)
    assert reason is not None and "fails the static stage" in reason
    assert "test_only_true_on_my_harness" in reason, "the reason shows which test failed"


def test_a_skill_that_cannot_apply_to_a_fresh_harness_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    broken = "import skillkit\n\n\ndef apply(harness_dir, params):\n    raise skillkit.EditError('no such file here')\n"
    reason = _trial(_learned(tmp_path, broken), sandbox, tmp_path)
    assert reason is not None and "does not work on a fresh math harness" in reason and "no such file here" in reason


def test_a_skill_that_only_reports_already_applied_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    """An edit that changes nothing shows nothing: a skill could claim it only where it suspects a trial."""
    claims = "import skillkit\n\n\ndef apply(harness_dir, params):\n    raise skillkit.AlreadyApplied('it is there')\n"
    reason = _trial(_learned(tmp_path, claims), sandbox, tmp_path)
    assert reason is not None and "changes nothing on a fresh math harness" in reason and "it is there" in reason


def test_a_skill_folder_holding_a_link_is_refused_before_anything_runs(sandbox: Sandbox, tmp_path: Path) -> None:
    folder = _learned(tmp_path, FAILING_TEST)
    (folder / "gold.patch").symlink_to("/etc/hostname")
    reason = _trial(folder, sandbox, tmp_path)
    assert reason is not None and "relies-on-its-run/gold.patch is a symbolic link" in reason
    assert not (tmp_path / "trial").exists()
