"""Candidate workspaces: where a proposer edits an export of main inside a sandbox, and how the
result crosses back — as plain files that are checked and then committed by meta-agent."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import git

from meta_agent.agents.base import Failure, Hypothesis, Implementation, Mounts, Proposer, Repairs, Workspace
from meta_agent.errors import ContractError
from meta_agent.gitops import commit_dir, export_tree, format_message
from meta_agent.untrusted_files import read_bytes
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
    """A `.git` written in the sandbox (any case: `.GIT` is `.git` to git on a case-insensitive check)
    would become an embedded repo or redirect git; drop it, whether a directory, a file or a link."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            if name.lower() != ".git":
                continue
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_dir():
                path.unlink()
            else:
                shutil.rmtree(path)
        dirnames[:] = [d for d in dirnames if d.lower() != ".git"]


def changed_attributes(repo: git.Repo, base: str, root: Path) -> list[str]:
    """`.gitattributes` files the sandbox added or changed: they select drivers git would run on commit."""
    problems = []
    for dirpath, _dirs, filenames in os.walk(root):
        if ".gitattributes" not in filenames:
            continue
        path = Path(dirpath) / ".gitattributes"
        rel = path.relative_to(root).as_posix()
        try:
            before = repo.git.show(f"{base}:{rel}", stdout_as_string=False)
        except git.GitCommandError:
            before = None
        try:
            now = read_bytes(path, MAX_FILE_BYTES)
        except ContractError:
            now = None
        if now is None or before != now:
            problems.append(f"{rel}: git attributes may not be added or changed by a candidate")
    return problems


def candidate_trailers(h: Hypothesis, cand_id: str, not_applied: Sequence[str] = ()) -> dict[str, str]:
    """`not_applied`: skills of the hypothesis whose change the commit does not hold (Skills-Used omits them)."""
    return {
        "Hypothesis": f"{h.failure_mode}: {h.evidence}"[:500],
        "Predicted-Effect": h.predicted_text(),
        "Skills-Used": ", ".join(s for s in h.skills_used if s not in not_applied) or "none",
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
    failure: Failure | None = None,
    evidence: Path | None = None,
) -> tuple[str | None, Implementation]:
    """Let the proposer edit an export of `base`; commit the result on `branch`. (commit or None, outcome).

    With `failure`, a repair turn: `base` is the candidate's failed commit (on `branch` already) and the
    proposer's `repair` revises it; the branch keeps the failed attempt when nothing comes of it.
    """
    path = export_tree(repo, base, work)
    extra = [p.parent for p in (rollouts, tasks) if p is not None] + ([evidence] if evidence else [])
    mounts = [Mount(kit_dir.resolve())] + [Mount(p.resolve()) for p in [*readable, *extra] if p.exists()]
    if isinstance(proposer, Mounts):
        mounts += proposer.mounts()  # e.g. an external coder's relay socket
    with sandbox.open(path, mounts=mounts, limits=limits) as session:
        ws = Workspace(path=path, session=session, kit_dir=kit_dir.resolve(), rollouts=rollouts, tasks=tasks,
                       evidence=evidence)
        if failure is None:
            outcome = proposer.implement(hypothesis, ws)
        elif not isinstance(proposer, Repairs):
            outcome = Implementation(ok=False, reason=f"{proposer.name} makes no repairs")
        else:
            outcome = proposer.repair(hypothesis, ws, failure)
    if not outcome.ok:
        return None, outcome
    _drop_nested_git(path)
    problems = unsafe_entries(path) + changed_attributes(repo, base, path)
    if problems:
        return None, Implementation(ok=False, reason="workspace holds unsafe entries: " + "; ".join(problems[:5]))
    body = f"{hypothesis.intervention}\n\n{outcome.summary}".strip()
    message = format_message(hypothesis.title, body, candidate_trailers(hypothesis, cand_id, outcome.not_applied))
    commit = commit_dir(repo, path, base, branch, message, when=when)
    if commit == base:
        if failure is None:
            repo.git.update_ref("-d", f"refs/heads/{branch}")
        return None, Implementation(ok=False, reason=f"the implementation changed nothing ({outcome.summary})")
    return commit, outcome
