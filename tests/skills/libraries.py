"""Small real skill libraries for tests: the seed library with a user and a run library in a temp dir."""

from __future__ import annotations

from pathlib import Path

from meta_agent.gitops import export_tree, init_harness
from meta_agent.paths import seed_skills
from meta_agent.skills.model import Evidence
from meta_agent.skills.runner import ApplyOutcome, prepare_kit, run_apply
from meta_agent.skills.store import Library, SkillSet, load_skill
from sandboxes import Mount, Sandbox


def layered(root: Path) -> SkillSet:
    """Seed + a user library under `root` + a run library under `root/run` (reloaded from disk each call)."""
    return SkillSet(seed=Library.load(seed_skills(), writable=False), user=Library.load(root / "user"),
                    run=Library.load(root / "run" / "skills"))


def outcome(i: int, domain: str, verdict: str = "rejected") -> Evidence:
    """One test of a skill in `domain` (distinct runs and commits for distinct `i`)."""
    return Evidence.model_validate(dict(
        run=f"run-{domain}-{i}", harness_repo="/h", commit=f"c{i}", domain=domain, metric="selection_delta",
        delta=0.1 if verdict == "promoted" else -0.1, ci=[-0.2, 0.2], verdict=verdict, stage="gate",
        date="2026-11-01"))


def apply_twice(sandbox: Sandbox, root: Path, name: str) -> tuple[ApplyOutcome, ApplyOutcome, Path]:
    """Apply the seed skill `name` to a fresh math harness twice in one sandbox session: (first, second,
    the harness folder)."""
    skill = load_skill(seed_skills() / name)
    work = export_tree(init_harness(root / "harness", "math"), "HEAD", root / "work")
    kit = prepare_kit(root / "kit")
    with sandbox.open(work, mounts=[Mount(kit), Mount(skill.path)]) as session:
        return run_apply(session, kit, skill, work, {}), run_apply(session, kit, skill, work, {}), work
