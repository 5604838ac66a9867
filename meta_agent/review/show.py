"""One candidate in full: its hypothesis, the rollouts it cited, its diff, every stage's numbers and the
verdict with its reason. Found by `g<gen>/c<k>` within a run or by its full candidate id."""

from __future__ import annotations

import re
from pathlib import Path

import git
from pydantic import BaseModel, Field

from meta_agent.contract import RolloutRecord, read_jsonl
from meta_agent.errors import ContractError, UserError
from meta_agent.eventlog import EventLog
from meta_agent.journal import Proposed
from meta_agent.journal_keys import gen_dir, gen_key
from meta_agent.review.candidates import CandidateRecord, read_candidates, runs_in_order
from meta_agent.training import VERIFIED

SHORT = re.compile(r"^g?(?P<g>\d+)[/-]c?(?P<k>\d+)$")


class UnknownCandidate(UserError, LookupError):
    """No candidate matches; the message lists those that exist."""


class CitedRollout(BaseModel):
    rollout_id: str
    found: bool = Field(description="False when the run dir is not at hand or no longer holds the rollouts")
    reward: float | None = None
    verified: bool | None = None
    labels: list[str] = Field(default_factory=list)
    completion: str = Field("", description="the first 400 characters")


class CandidateDetail(BaseModel):
    """What `show --json` prints: the history record plus the parts only `show` gives."""

    candidate: CandidateRecord
    intervention: str = Field(description="the commit message body: what the change does")
    cited_rollouts: list[CitedRollout]
    diff: str = Field(description="the candidate's change against the main it branched from")


def find(records: list[CandidateRecord], spec: str, run_id: str | None, repo: git.Repo) -> CandidateRecord:
    """`spec` is a full candidate id (`<run>/<g>-<k>`) or `g<g>/c<k>` in `run_id` (default: the last run)."""
    exact = [r for r in records if r.cand_id == spec]
    if exact:
        return exact[0]
    m = SHORT.match(spec)
    if m and records:
        run = run_id or runs_in_order(repo, records)[-1]
        hit = [r for r in records if r.run_id == run and (r.generation, r.k) == (int(m["g"]), int(m["k"]))]
        if hit:
            return hit[0]
    known = ", ".join(f"{r.short} ({r.cand_id})" for r in records if run_id is None or r.run_id == run_id)
    raise UnknownCandidate(f"no candidate {spec!r} with a verdict note in {repo.working_dir}; known: "
                           f"{known or 'none (no evolve run has recorded a verdict here)'}")


def _cited(run_dir: Path | None, generation: int, k: int) -> list[CitedRollout]:
    """The rollouts the hypothesis cited (from the run's journal), with main's rollouts of that generation."""
    if run_dir is None or not (run_dir / "events.jsonl").is_file():
        return []
    log = EventLog(run_dir, repair=False)
    proposed = log.done(gen_key(generation, "propose"), Proposed)
    if proposed is None or k >= len(proposed.hypotheses):
        return []
    ids = list(proposed.hypotheses[k].evidence_rollouts)
    path = run_dir / gen_dir(generation) / "main" / VERIFIED
    try:
        by_id = {r.rollout_id: r for r in read_jsonl(path, RolloutRecord)} if path.is_file() else {}
    except ContractError:
        by_id = {}
    out = []
    for i in ids:
        r = by_id.get(i)
        out.append(CitedRollout(rollout_id=i, found=False) if r is None else CitedRollout(
            rollout_id=i, found=True, reward=r.reward, verified=r.verified, labels=list(r.labels),
            completion=r.completion[:400]))
    return out


def describe(repo: git.Repo, spec: str, run_dir: Path | None = None) -> CandidateDetail:
    """Everything about one candidate; `run_dir` (its evolve run) adds the rollouts its hypothesis cited."""
    run_id = run_dir.name if run_dir is not None else None
    record = find(read_candidates(repo), spec, run_id, repo)
    body, diff = "", ""
    if record.commit is not None:
        commit = repo.commit(record.commit)
        message = str(commit.message)
        body = message.split("\n\n", 1)[1].rsplit("\n\n", 1)[0].strip() if message.count("\n\n") >= 2 else ""
        base = commit.parents[0].hexsha if commit.parents else None
        diff = repo.git.diff(base, record.commit) if base else ""
    cited = _cited(run_dir, record.generation, record.k) if run_dir is not None and record.run_id == run_id else []
    return CandidateDetail(candidate=record, intervention=body, cited_rollouts=cited, diff=diff)
