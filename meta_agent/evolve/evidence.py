"""The evidence folder a generation's agents browse with ordinary read-only tools (`evidence/...`).

Written by meta-agent (trusted) before the proposer runs, from what it already validated:

    evidence/README.md            what is here
    evidence/report.md            this generation's rollout report
    evidence/rollouts/index.tsv   one line per rollout: id, task, reward, verified, truncated, labels, opening
    evidence/rollouts/<id>.json   each rollout whole: prompt, completion, reward per component, labels, verdict
    evidence/candidates/<id>/     every earlier candidate on this harness (this run and earlier ones):
                                  candidate.json (hypothesis, verdict, every stage's numbers), diff.patch
    evidence/main-history.txt     main's first-parent history with the merge trailers

Only the training split's rollouts are here, with the sealed verifier's verdict on them (as in the report);
nothing of the sealed selection/test splits, and not the hacking probes' texts (the gate draws them from a
secret seed so that a candidate cannot special-case them; their share is in the report).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import git

from meta_agent.contract import RolloutRecord
from meta_agent.fsutil import atomic_write_text
from meta_agent.gitops import trailers
from meta_agent.review.candidates import read_candidates

MAX_DIFF_CHARS = 200_000
MAX_CANDIDATES = 200
"""The newest ones, when a harness has seen more."""

README = """# Evidence for generation {g}

Read-only. Open what you need with the file tools (paths start with `evidence/`):
- `evidence/report.md`: the rollout report of the policy trained under main this generation;
- `evidence/rollouts/index.tsv`: every rollout of that training run, one per line, then
  `evidence/rollouts/<rollout_id>.json` for one whole (prompt, completion, rewards per component,
  diagnostic labels, the sealed verifier's verdict);
- `evidence/candidates/<candidate>/`: each earlier candidate on this harness: `candidate.json`
  (hypothesis, verdict and why, every stage's numbers) and `diff.patch`;
- `evidence/main-history.txt`: what main has merged so far.
Cite the rollout ids you read as evidence.
"""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:120] or "_"


def _rollout_line(r: RolloutRecord) -> str:
    opening = r.completion[:80].replace("\t", " ").replace("\n", "\\n")
    return "\t".join([r.rollout_id, r.task_id, f"{r.reward:.3f}", str(r.verified), str(r.truncated),
                      ",".join(r.labels), opening])


def _base(repo: git.Repo, commit: str, cand_id: str) -> str | None:
    """The commit a candidate branched from: below all of its own commits (a repaired one has several)."""
    c = repo.commit(commit)
    while c.parents and trailers(repo, c.parents[0].hexsha).get("Candidate") == cand_id:
        c = c.parents[0]
    return c.parents[0].hexsha if c.parents else None


def write_evidence(out: Path, *, generation: int, rollouts: list[RolloutRecord], report_md: str,
                   repo: git.Repo, main: str, run_id: str | None = None) -> Path:
    """(Re)write the evidence folder `out`; returns it.

    With `run_id`, it holds what the run had decided when `generation` started: none of that generation's
    own candidates, nor a later one's. A generation redone after a kill finds some of its candidates
    already noted, and its coders would have read their siblings' diffs and verdicts, which an
    uninterrupted run never shows them."""
    building = out.with_name(out.name + ".new")
    shutil.rmtree(building, ignore_errors=True)
    (building / "rollouts").mkdir(parents=True)
    atomic_write_text(building / "README.md", README.format(g=generation))
    atomic_write_text(building / "report.md", report_md)
    header = "rollout_id\ttask_id\treward\tverified\ttruncated\tlabels\tcompletion (first 80 characters)"
    atomic_write_text(building / "rollouts" / "index.tsv", "\n".join([header, *map(_rollout_line, rollouts)]) + "\n")
    for r in rollouts:
        atomic_write_text(building / "rollouts" / f"{_safe(r.rollout_id)}.json", r.model_dump_json(indent=2))
    earlier = [c for c in read_candidates(repo) if not (c.run_id == run_id and c.generation >= generation)]
    for c in earlier[-MAX_CANDIDATES:]:
        folder = building / "candidates" / _safe(c.cand_id)
        folder.mkdir(parents=True)
        atomic_write_text(folder / "candidate.json", c.model_dump_json(indent=2))
        if c.commit:
            base = _base(repo, c.commit, c.cand_id)
            diff = repo.git.diff(base, c.commit) if base else ""
            atomic_write_text(folder / "diff.patch", diff[:MAX_DIFF_CHARS])
    history = repo.git.log("--first-parent", "--format=%h %ad %s%n%(trailers:only,unfold)", "--date=short", main)
    atomic_write_text(building / "main-history.txt", history + "\n")
    if out.exists():
        shutil.rmtree(out)
    building.rename(out)
    return out
