"""Candidate workspaces: where a proposer edits an export of main inside a sandbox, and how the
result crosses back — as plain files that are checked and then committed by meta-agent."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import git

from meta_agent.agents.base import Hypothesis, Implementation, Proposer, Workspace
from meta_agent.gitops import commit_dir, export_tree, format_message
from sandboxes import Limits, Mount, Sandbox

MAX_FILE_BYTES = 2_000_000


def unsafe_entries(root: Path) -> list[str]:
    """Entries a sandboxed edit must not hand back: escaping symlinks, special files, huge files."""
    problems = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root)
            if path.is_symlink():
                target = (path.parent / os.readlink(path)).resolve()
                if not target.is_relative_to(root.resolve()):
                    problems.append(f"{rel}: symlink pointing outside the harness ({os.readlink(path)})")
            elif path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
                problems.append(f"{rel}: {path.stat().st_size} bytes, over {MAX_FILE_BYTES}")
            elif not (path.is_file() or path.is_dir()):
                problems.append(f"{rel}: not a regular file")
    return problems


def _drop_nested_git(root: Path) -> None:
    """A `.git` written by the sandbox would become an embedded repo (or redirect git); drop it."""
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            shutil.rmtree(Path(dirpath) / ".git")
            dirnames.remove(".git")
        if ".git" in filenames:
            (Path(dirpath) / ".git").unlink()


def candidate_trailers(h: Hypothesis, cand_id: str) -> dict[str, str]:
    return {
        "Hypothesis": f"{h.failure_mode}: {h.evidence}"[:500],
        "Predicted-Effect": h.predicted_text(),
        "Skills-Used": ", ".join(h.skills_used) or "none",
        "Kind": h.kind,
        "Candidate": cand_id,
    }


def implement(
    *,
    repo: git.Repo,
    base: str,
    branch: str,
    cand_id: str,
    hypothesis: Hypothesis,
    proposer: Proposer,
    sandbox: Sandbox,
    limits: Limits,
    work: Path,
    kit_dir: Path,
    readable: Sequence[Path],
    when: str | None,
    rollouts: Path | None = None,
    tasks: Path | None = None,
) -> tuple[str | None, Implementation]:
    """Let the proposer edit an export of `base`; commit the result on `branch`. (commit or None, outcome)."""
    path = export_tree(repo, base, work)
    extra = [p.parent for p in (rollouts, tasks) if p is not None]
    mounts = [Mount(kit_dir.resolve())] + [Mount(p.resolve()) for p in [*readable, *extra] if p.exists()]
    with sandbox.open(path, mounts=mounts, limits=limits) as session:
        ws = Workspace(path=path, session=session, kit_dir=kit_dir.resolve(), rollouts=rollouts, tasks=tasks)
        outcome = proposer.implement(hypothesis, ws)
    if not outcome.ok:
        return None, outcome
    _drop_nested_git(path)
    problems = unsafe_entries(path)
    if problems:
        return None, Implementation(ok=False, reason="workspace holds unsafe entries: " + "; ".join(problems[:5]))
    body = f"{hypothesis.intervention}\n\n{outcome.summary}".strip()
    message = format_message(hypothesis.title, body, candidate_trailers(hypothesis, cand_id))
    commit = commit_dir(repo, path, base, branch, message, when=when)
    if commit == base:
        repo.git.update_ref("-d", f"refs/heads/{branch}")
        return None, Implementation(ok=False, reason=f"the implementation changed nothing ({outcome.summary})")
    return commit, outcome
