"""Every candidate of a harness repo, read from git alone: the verdict note on its commit (or its merge)
and the trailers of its commit. A candidate that failed before it had a commit left no note: `lineage`
shows those from the run's journal."""

from __future__ import annotations

import re
from pathlib import Path

import git
from pydantic import BaseModel, Field, ValidationError

from meta_agent.gitops import ARCHIVE_MERGE, NOTES_REF, is_merged, trailers
from meta_agent.verdicts import StageResult, Verdict

CAND_ID = re.compile(r"^(?P<run>.+)/(?P<g>\d+)-(?P<k>\d+)$")


class StageRecord(StageResult):
    """One backtest stage as the note recorded it (the note also names whose stage it was)."""

    cand_id: str = ""


class VerdictNote(BaseModel):
    """The git note meta-agent puts on a candidate's commit and on its merge."""

    verdict: Verdict
    stages: list[StageRecord] = Field(default_factory=list)


class CandidateRecord(BaseModel):
    """One candidate as `history --json` prints it; the keys are stable."""

    run_id: str
    generation: int
    k: int
    cand_id: str = Field(description="<run_id>/<generation>-<k>, as in the journal, trailers and notes")
    short: str = Field(description="g<generation>/c<k>, how `show` accepts it within one run")
    commit: str | None = Field(description="the candidate's commit (None if git no longer has it)")
    branch: str | None = Field(description="cand/<cand_id> while that branch exists (None once pruned)")
    merge_commit: str | None = Field(description="its merge into main, when it was merged")
    verdict: str = Field(description="promoted | rejected | conflict")
    merged: bool
    title: str
    hypothesis: str = Field(description="the Hypothesis trailer: failure mode and the evidence for it")
    predicted_effect: str
    declared_kind: str | None
    measured_kind: str = Field(description="what the replay measured: validity | diagnostic | performance")
    stage_reached: str = Field(description="the last stage that ran (merge, once merged)")
    decided_at: str = Field(description="the stage whose result decided the verdict")
    reason: str
    delta: float | None
    ci: list[float] | None
    skills_used: list[str]
    skills_learned: list[str] = Field(default_factory=list, description="skills written from this candidate")
    built_on: str | None = Field(None, description=(
        "the archived candidate whose change lies under this one (--archive-parents): merging it brings both"))
    stages: list[StageRecord]


def _notes(repo: git.Repo) -> list[tuple[str, str]]:
    """(annotated commit, note text) for every note under meta-agent's notes ref."""
    try:
        listing = repo.git.notes("--ref", NOTES_REF, "list")
    except git.GitCommandError:
        return []
    out = []
    for line in listing.splitlines():
        blob, _, target = line.partition(" ")
        out.append((target, repo.git.cat_file("blob", blob)))
    return out


def _commit(repo: git.Repo, sha: str) -> git.Commit | None:
    try:
        return repo.commit(sha)
    except (ValueError, git.BadName):
        return None


def _branch(repo: git.Repo, cand_id: str) -> str | None:
    name = f"cand/{cand_id}"
    return name if f"refs/heads/{name}" in {r.path for r in repo.references} else None


def read_notes(repo: git.Repo) -> dict[str, tuple[str, VerdictNote, list[str]]]:
    """cand_id -> (its commit, its verdict note, its merge commits) for every candidate with a note."""
    found: dict[str, tuple[str, VerdictNote]] = {}
    merges: dict[str, list[str]] = {}
    for target, text in _notes(repo):
        try:
            note = VerdictNote.model_validate_json(text)
        except ValidationError:
            continue  # a note someone else wrote
        cand_id = note.verdict.cand_id
        commit = _commit(repo, target)
        if commit is not None and len(commit.parents) >= 2:
            merges.setdefault(cand_id, []).append(target)
            found.setdefault(cand_id, (commit.parents[1].hexsha, note))
        else:
            found[cand_id] = (target, note)
    return {c: (sha, note, merges.get(c, [])) for c, (sha, note) in found.items()}


def read_candidates(repo: git.Repo) -> list[CandidateRecord]:
    """Every candidate that has a verdict note, ordered by run (oldest first), generation and slot."""
    records = [r for cand_id, (sha, note, merges) in read_notes(repo).items()
               if (r := _record(repo, cand_id, sha, note, merges)) is not None]
    order = _run_order(repo, records)
    return sorted(records, key=lambda r: (order[r.run_id], r.generation, r.k))


def _run_order(repo: git.Repo, records: list[CandidateRecord]) -> dict[str, tuple[int, str]]:
    """Runs by the earliest date of their candidate commits (a run whose commits are gone sorts first)."""
    first: dict[str, int] = {}
    for r in records:
        c = _commit(repo, r.commit) if r.commit else None
        when = c.committed_date if c is not None else 0
        first[r.run_id] = min(first.get(r.run_id, when), when)
    return {run: (when, run) for run, when in first.items()}


def runs_in_order(repo: git.Repo, records: list[CandidateRecord]) -> list[str]:
    order = _run_order(repo, records)
    return sorted(order, key=lambda run: order[run])


def built_on(repo: git.Repo, sha: str) -> str | None:
    """The archived candidate under commit `sha`, from git alone: on its first-parent line, the first merge
    is either archive.py's (its subject names the candidate) or one of main's (built on main alone)."""
    merge = repo.git.rev_list("--first-parent", "--merges", "-n", "1", sha).strip()
    subject = str(repo.commit(merge).summary) if merge else ""
    if not subject.startswith(ARCHIVE_MERGE):
        return None
    return subject[len(ARCHIVE_MERGE):].strip() or None


def _record(repo: git.Repo, cand_id: str, sha: str, note: VerdictNote,
            merge_commits: list[str]) -> CandidateRecord | None:
    m = CAND_ID.match(cand_id)
    if m is None:
        return None
    v = note.verdict
    stages = [s for s in note.stages if s.cand_id in ("", cand_id)]
    commit = _commit(repo, sha)
    t = trailers(repo, sha) if commit is not None else {}
    merge = next((c for c in merge_commits if is_merged(repo, c)), None)
    skills = [s.strip() for s in t.get("Skills-Used", "").split(",") if s.strip() and s.strip() != "none"]
    g, k = int(m["g"]), int(m["k"])
    reached = "merge" if merge else (stages[-1].stage if stages else v.stage)
    return CandidateRecord(
        run_id=m["run"], generation=g, k=k, cand_id=cand_id, short=f"g{g}/c{k}",
        commit=sha if commit is not None else None, branch=_branch(repo, cand_id), merge_commit=merge,
        verdict=v.verdict, merged=merge is not None, title=str(commit.summary) if commit is not None else "",
        hypothesis=t.get("Hypothesis", ""), predicted_effect=t.get("Predicted-Effect", ""),
        declared_kind=v.declared_kind, measured_kind=v.kind, stage_reached=reached, decided_at=v.stage,
        reason=v.reason, delta=v.delta, ci=v.ci, skills_used=skills, stages=stages,
        built_on=built_on(repo, sha) if commit is not None else None)


def with_learned_skills(records: list[CandidateRecord], skill_roots: list[Path]) -> list[CandidateRecord]:
    """Fill `skills_learned` from the skills libraries: a learned skill names its candidate in provenance."""
    from meta_agent.skills.store import Library

    learned: dict[str, list[str]] = {}
    for root in skill_roots:
        for skill in Library.load(root).skills.values():
            cand = skill.meta.provenance.get("candidate")
            if cand and skill.name not in learned.get(cand, []):
                learned.setdefault(cand, []).append(skill.name)
    return [r.model_copy(update={"skills_learned": sorted(learned.get(r.cand_id, []))}) for r in records]
