"""Before a learned skill reaches the user library: its apply.py must work on a fresh harness.

A skill an LLM distilled from one run's winner may only work on that run's harness (it may lean on a
change merged earlier in the run, or on a file only that harness has). Other projects start from the
template, so the trial is: a fresh harness of the skill's domain, the skill's apply.py run on it in
the sandbox (like any candidate's edit), the result committed by meta-agent and put through the
static stage (boundary checks, import, selftest). Only a skill that passes is published.

A skill could behave one way in its trial and another in use. The trial does not announce itself (the
workspace the sandbox sees sits where the skill's own candidate was implemented, next to the same
kit; nothing it can see is named after a trial), but a fresh harness is never fully disguised, so a
learned skill passes only by changing that harness, never by reporting `AlreadyApplied`, and its
change must pass the static stage.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from meta_agent.agents.base import Hypothesis, Implementation, Outcome, ProposalContext, Workspace
from meta_agent.backtest.static import run_static
from meta_agent.fsutil import fresh_dir
from meta_agent.gitops import init_harness
from meta_agent.skills.model import APPLY_FILE
from meta_agent.skills.plain_folder import read_folder
from meta_agent.skills.runner import ALREADY_APPLIED, run_apply
from meta_agent.skills.skill_files import check_apply
from meta_agent.skills.store import Skill, SkillError
from meta_agent.workspace import implement
from sandboxes import Limits, Sandbox

REFUSED_DIR = ".refused"
"""In a run's skills library: learned skills that failed their trial (no library loads a dot folder)."""


class _ApplyOnly:
    """Implements the one hypothesis of a trial by running the skill's apply.py, nothing else."""

    name = "skill-trial"

    def __init__(self, skill: Skill) -> None:
        self.skill = skill

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        return []

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        outcome = run_apply(workspace.session, workspace.kit_dir, self.skill, workspace.path, hypothesis.params)
        return Implementation(ok=outcome.ok, summary=outcome.summary, reason=outcome.reason)

    def learn(self, outcome: Outcome) -> Path | None:
        return None


def trial(skill: Skill, harness_domain: str, *, sandbox: Sandbox, limits: Limits, kit_dir: Path,
          work: Path, edit: Path | None = None) -> str | None:
    """None when `skill` changes a fresh `harness_domain` harness and the result passes the static stage;
    else the reason it may not be published. `work` holds the trial's harness repo and static stage;
    `edit` (default `work/edit`) is the workspace the sandbox sees."""
    problem = _shape_problem(skill)
    if problem is not None:
        return problem
    if skill.apply_script is None:
        return None  # a note without code: nothing runs, nothing to try
    work = fresh_dir(work)
    repo = init_harness(work / "harness", harness_domain)
    main = repo.commit("main").hexsha
    hypothesis = Hypothesis(title=f"Trial of skill {skill.name}"[:100], failure_mode="trial",
                            evidence="publication check on a fresh harness", intervention=skill.meta.description,
                            kind=skill.meta.gate_kind, skills_used=[skill.name], params=dict(skill.meta.params))
    commit, outcome = implement(repo=repo, base=main, branch="trial", cand_id=f"trial/{skill.name}",
                                hypothesis=hypothesis, proposer=_ApplyOnly(skill), sandbox=sandbox, limits=limits,
                                work=edit or work / "edit", kit_dir=kit_dir, readable=[skill.path], when=None)
    if commit is None:
        if outcome.reason.startswith(ALREADY_APPLIED):
            return (f"its apply.py changes nothing on a fresh {harness_domain} harness ({outcome.reason}): a "
                    "learned skill is published only when its edit is seen to work")
        return f"its apply.py does not work on a fresh {harness_domain} harness: {outcome.reason}"
    static = run_static(repo, main, commit, sandbox, limits, work / "static")
    if not static.passed:
        return f"on a fresh {harness_domain} harness its change fails the static stage: {static.reason}"
    return None


def _shape_problem(skill: Skill) -> str | None:
    """Why the skill's folder cannot even be tried: not plain bounded files, or an apply.py that cannot
    parse (checked here, bounded, before any sandbox starts)."""
    try:
        files = read_folder(skill.path)
    except SkillError as e:
        return f"its folder is not plain data: {e}"
    source = files.get(PurePosixPath(APPLY_FILE))
    if source is None:
        return None
    problem = check_apply(source.decode("utf-8", errors="replace"))
    return f"its apply.py cannot run: {problem}" if problem else None
