"""Putting a finished run's candidate branches away: each `cand/<run>/...` branch is archived (a git
bundle that restores it, and a JSON file with its commit, message and note) in the run directory, then
deleted. The verdict notes stay where they are (`refs/notes/commits`), so `history` still shows them."""

from __future__ import annotations

import json
from pathlib import Path

import git
from pydantic import BaseModel, Field, TypeAdapter

from meta_agent.errors import RunDirError
from meta_agent.eventlog import EventLog, require_run
from meta_agent.fsutil import atomic_write_text
from meta_agent.gitops import GitOpsError, open_harness, read_note
from meta_agent.journal import RunDone
from meta_agent.runinfo import read_run_info

BUNDLE = "candidates.bundle"
ARCHIVE = "candidates.json"


class ArchivedBranch(BaseModel):
    branch: str
    commit: str
    message: str
    note: dict[str, object] | None = Field(description="the verdict note on the commit, as JSON")


class Pruned(BaseModel):
    branches: list[str]
    bundle: Path | None
    archive: Path | None


def archived(run_dir: Path) -> dict[str, str]:
    """branch -> commit of the branches `prune` removed from this run (empty if it never ran)."""
    path = run_dir / ARCHIVE
    if not path.is_file():
        return {}
    entries = TypeAdapter(list[ArchivedBranch]).validate_json(path.read_text())
    return {e.branch: e.commit for e in entries}


def _note(repo: git.Repo, commit: str) -> dict[str, object] | None:
    text = read_note(repo, commit)
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return {"text": text}
    return data if isinstance(data, dict) else {"text": text}


def prune_run(run_dir: Path) -> Pruned:
    """Archive and delete the candidate branches of a finished run (RunDirError if it is not finished)."""
    require_run(run_dir)
    if not EventLog(run_dir, repair=False).of_type(RunDone):
        raise RunDirError(f"{run_dir} is not finished: its candidate branches are still needed. Finish it with "
                          f"`meta-agent resume {run_dir}` first")
    repo = open_harness(Path(read_run_info(run_dir).harness))
    prefix = f"refs/heads/cand/{run_dir.name}/"
    refs = sorted((r.path, r.commit.hexsha) for r in repo.references if r.path.startswith(prefix))
    if not refs:
        return Pruned(branches=[], bundle=None, archive=None)
    if not repo.head.is_detached and f"refs/heads/{repo.active_branch.name}" in {path for path, _ in refs}:
        raise GitOpsError(f"{repo.working_dir} has {repo.active_branch.name} checked out; check out main first")
    entries = [ArchivedBranch(branch=path.removeprefix("refs/heads/"), commit=sha,
                              message=str(repo.commit(sha).message), note=_note(repo, sha)) for path, sha in refs]
    earlier = (run_dir / ARCHIVE).read_text() if (run_dir / ARCHIVE).is_file() else "[]"
    kept = [e for e in TypeAdapter(list[ArchivedBranch]).validate_json(earlier)
            if e.branch not in {n.branch for n in entries}]
    bundle = run_dir / BUNDLE
    partial = bundle.with_name(BUNDLE + ".partial")
    repo.git.bundle("create", str(partial), *(path for path, _ in refs))
    partial.replace(bundle)
    atomic_write_text(run_dir / ARCHIVE, json.dumps([e.model_dump(mode="json") for e in [*kept, *entries]],
                                                    indent=2))
    for path, sha in refs:  # compare-and-delete: a branch moved since it was archived is left alone
        repo.git.update_ref("-d", path, sha)
    return Pruned(branches=[e.branch for e in entries], bundle=bundle, archive=run_dir / ARCHIVE)
