"""The harness repos the benchmark's arms train under, besides the reference (reference.py):

- a copy of the reference for each evolve run (an evolve run merges into the repo it is given);
- the blind bundle: the reference with every seed skill applied whose trigger fires on the reference's
  first rollout report, all at once, nothing gated (the search control "apply everything that looks
  relevant");
- the evolved harness without one merged change (leave-one-out): main with that merge undone, by git's own
  three-way merge, so later changes that touched the same lines stay or the removal is reported as
  impossible;
- what each merged change is: a config value (harness.yaml keys) or code, and which part of the harness.

Skills' apply.py runs in the sandbox, as in an evolve run (meta_agent.workspace.implement).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import git
import yaml
from pydantic import BaseModel, Field

from meta_agent.agents.base import Implementation, Outcome, ProposalContext, Workspace
from meta_agent.config import SandboxSettings
from meta_agent.eventlog import EventLog
from meta_agent.gitops import advance, author_env, open_harness
from meta_agent.hypothesis import Hypothesis
from meta_agent.journal import Merged, VerdictRecorded
from meta_agent.paths import seed_skills
from meta_agent.report.rollout_report import RolloutReport
from meta_agent.sealed import sealed_backend
from meta_agent.skills.retrieve import rank
from meta_agent.skills.runner import ALREADY_APPLIED, prepare_kit, run_apply
from meta_agent.skills.store import Library, SkillSet
from meta_agent.workspace import implement

SURFACE_OF_FILE = {"rewards.py": "reward", "scoring.py": "reward", "filters.py": "filter",
                   "diagnostics.py": "diagnostic", "prompts.py": "prompt", "answers.py": "prompt",
                   "curriculum.py": "curriculum"}


def copy_harness(src: Path, dest: Path) -> Path:
    """A private copy of a harness repo (history, branches and checkout), made whole or not at all."""
    if (dest / ".git").is_dir():
        return dest
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(src, partial, symlinks=True)
    partial.rename(dest)
    return dest


def same_files(a: Path, b: Path) -> bool:
    """The two harness repos' HEAD commits hold the same files, byte for byte (git names a tree by its
    contents): a training under either is the same job, since `rollout` trains HEAD's files."""
    return open_harness(a).head.commit.tree.hexsha == open_harness(b).head.commit.tree.hexsha


class Bundle(BaseModel):
    """What the blind bundle applied to the reference."""

    triggered: list[str]
    """Seed skills whose triggers fired on the report, in rank order."""
    applied: list[str] = Field(default_factory=list)
    already: list[str] = Field(default_factory=list)
    """Triggered skills whose change the reference already has."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Triggered skills whose apply.py did not work on top of the others, with the reason."""


class _ApplyAll:
    """Applies every skill of the hypothesis in turn, keeping those that work (a bundle is not a recipe: one
    skill that cannot apply on top of the others is left out and named, not fatal)."""

    name = "blind-bundle"

    def __init__(self, skills: SkillSet, bundle: Bundle, params: dict[str, dict[str, object]] | None = None) -> None:
        self.skills, self.bundle, self.params = skills, bundle, params or {}

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        return []

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        for name in hypothesis.skills_used:
            skill = self.skills.get(name)
            params = {**skill.meta.params, **self.params.get(name, {})}
            outcome = run_apply(workspace.session, workspace.kit_dir, skill, workspace.path, params)
            if outcome.ok:
                self.bundle.applied.append(name)
            elif outcome.reason.startswith(ALREADY_APPLIED):
                self.bundle.already.append(name)
            else:
                self.bundle.failed[name] = outcome.reason[:300]
        return Implementation(ok=bool(self.bundle.applied), summary=", ".join(self.bundle.applied),
                              reason="" if self.bundle.applied else "no triggered skill changed the harness")

    def learn(self, outcome: Outcome) -> None:
        return None


def bundle_harness(reference: Path, dest: Path, report_file: Path, sandbox: str, work: Path) -> Bundle:
    """`dest`: a copy of `reference` with every seed skill that `report_file`'s triggers select applied at once
    (main moved to that commit). Returns what was applied; with nothing applicable, `dest` is the reference."""
    report = RolloutReport.model_validate_json(report_file.read_text())
    skills = SkillSet(seed=Library.load(seed_skills(), writable=False))
    triggered = [r.skill.name for r in rank(skills, report) if r.trigger_score > 0]
    return skills_harness(reference, dest, triggered, sandbox, work,
                          title=f"Blind bundle of {len(triggered)} triggered seed skills",
                          why=("the efficacy benchmark's search control", "apply every seed skill whose trigger fires"))


def skills_harness(reference: Path, dest: Path, names: list[str], sandbox: str, work: Path, title: str,
                   why: tuple[str, str], params: dict[str, dict[str, object]] | None = None) -> Bundle:
    """`dest`: a copy of `reference` with the seed skills `names` applied in turn by their apply.py, in the
    sandbox, as one commit that main moves to (`why`: the commit's evidence and intervention; `params`: a
    skill's parameters other than its defaults). With none applicable, `dest` is the reference."""
    skills = SkillSet(seed=Library.load(seed_skills(), writable=False))
    bundle = Bundle(triggered=names)
    shutil.rmtree(dest, ignore_errors=True)
    copy_harness(reference, dest)
    if not names:
        return bundle
    repo = open_harness(dest)
    main = repo.commit("main").hexsha
    hypothesis = Hypothesis(title=title[:100], failure_mode="every triggered one", evidence=why[0],
                            intervention=why[1], kind="performance", skills_used=names)
    commit, _ = implement(repo=repo, base=main, branch="blind-bundle", cand_id="bundle", hypothesis=hypothesis,
                          proposer=_ApplyAll(skills, bundle, params), sandbox=sealed_backend(sandbox),
                          limits=SandboxSettings(backend=sandbox).limits(), work=work / "edit",
                          kit_dir=prepare_kit(work / "kit"), readable=[seed_skills()], when=None)
    if commit is not None:
        advance(repo, "main", commit, main)  # the checkout follows main, as a merge's does
    return bundle


class Change(BaseModel):
    """One change the evolve run merged into main."""

    cand_id: str
    title: str
    merge_commit: str
    delta: float | None
    """Its gate delta on the selection split."""
    kind: str
    """config (only harness.yaml) or code."""
    parts: list[str]
    """What it touched: harness.yaml keys (rl.learning_rate) and code parts (reward, filter, diagnostic, prompt,
    curriculum, other: path)."""


def _yaml_keys(repo: git.Repo, old: str, new: str) -> list[str]:
    def flat(commit: str) -> dict[str, object]:
        try:
            data = yaml.safe_load(repo.git.show(f"{commit}:harness.yaml")) or {}
        except (git.GitCommandError, yaml.YAMLError):
            return {}
        out: dict[str, object] = {}
        for section, values in data.items() if isinstance(data, dict) else []:
            for key, value in (values.items() if isinstance(values, dict) else [("", values)]):
                out[f"{section}.{key}" if key else str(section)] = value
        return out

    before, after = flat(old), flat(new)
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def merged_changes(run_dir: Path, harness: Path) -> list[Change]:
    """The evolve run's merged changes in merge order, each with its gate delta and what it touched."""
    log = EventLog(run_dir)
    verdicts = {v.cand_id: v for v in log.of_type(VerdictRecorded) if v.promoted}
    repo = open_harness(harness)
    out = []
    for m in log.of_type(Merged):
        commit = repo.commit(m.merge_commit)
        before = commit.parents[0].hexsha
        files = repo.git.diff("--name-only", before, commit.hexsha).split()
        code = [f for f in files if f != "harness.yaml"]
        parts = _yaml_keys(repo, before, commit.hexsha) if "harness.yaml" in files else []
        parts += sorted({SURFACE_OF_FILE.get(Path(f).name, f"other: {f}") for f in code})
        v = verdicts.get(m.cand_id)
        out.append(Change(cand_id=m.cand_id, title=v.title if v else m.branch, merge_commit=commit.hexsha,
                          delta=v.delta if v else None, kind="code" if code else "config", parts=parts))
    return out


def without_change(final: Path, dest: Path, change: Change) -> str | None:
    """`dest`: a copy of the evolved harness `final` whose main has `change` undone (`git revert -m 1` of its
    merge, one commit on top of main); None, or the reason it cannot be undone cleanly."""
    shutil.rmtree(dest, ignore_errors=True)
    copy_harness(final, dest)
    repo = open_harness(dest)
    with repo.git.custom_environment(**author_env()):
        repo.git.checkout("-q", "-f", "main")
        repo.git.reset("-q", "--hard", "main")
        merge = repo.commit(change.merge_commit)
        try:
            repo.git.revert("--no-edit", *(["-m", "1"] if len(merge.parents) > 1 else []), merge.hexsha)
        except git.GitCommandError as e:
            with contextlib.suppress(git.GitCommandError):  # nothing in progress to abort: dest is discarded
                repo.git.revert("--abort")
            return f"later changes overlap it: {(e.stdout or e.stderr).strip()[:300]}"
    return None
