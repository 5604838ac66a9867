"""Lineage: a SQLite index of a run's journal (`eventlog.EventLog`), and checks of it against git.

The index is a view for queries (`meta-agent lineage`); it is always rebuilt from the journal,
never the other way round, and building it never changes the journal.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import git

from meta_agent.eventlog import EventLog, require_run
from meta_agent.gitops import is_merged, read_note
from meta_agent.journal import (
    CandidateCreated,
    Event,
    GenerationDone,
    Merged,
    Repaired,
    RunDone,
    RunStarted,
    StageDone,
    VerdictRecorded,
    with_repairs,
)
from meta_agent.review.prune import archived

INDEX = "lineage.sqlite"


SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, domain TEXT, harness TEXT, started TEXT,
    status TEXT, root_policy TEXT, initial_main TEXT, final_main TEXT);
CREATE TABLE IF NOT EXISTS generations (run_id TEXT, gen INTEGER, main_before TEXT, main_after TEXT,
    policy TEXT, control_score REAL, control_low REAL, control_high REAL, dominant TEXT,
    PRIMARY KEY (run_id, gen));
CREATE TABLE IF NOT EXISTS candidates (cand_id TEXT PRIMARY KEY, run_id TEXT, gen INTEGER, k INTEGER,
    branch TEXT, commit_sha TEXT, title TEXT, kind TEXT, skills TEXT, verdict TEXT, stage TEXT, reason TEXT,
    delta REAL, ci_low REAL, ci_high REAL, merge_commit TEXT);
CREATE TABLE IF NOT EXISTS stages (cand_id TEXT, stage TEXT, passed INTEGER, reason TEXT, seconds REAL,
    metrics TEXT, PRIMARY KEY (cand_id, stage));
"""


def rebuild_index(run_dir: Path) -> Path:
    """(Re)create lineage.sqlite from events.jsonl; returns its path."""
    require_run(run_dir)
    log = EventLog(run_dir, repair=False)
    path = run_dir / INDEX
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    db.executescript(SCHEMA)
    for record in log.records:
        _apply(db, record.event)
    db.commit()
    db.close()
    os.replace(tmp, path)
    return path


def _apply(db: sqlite3.Connection, e: Event) -> None:
    if isinstance(e, RunStarted):
        db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?)",
                   (e.run_id, e.domain, e.harness, e.started, "running", e.root_policy, e.initial_main, None))
    elif isinstance(e, GenerationDone):
        db.execute("INSERT OR REPLACE INTO generations VALUES (?,?,?,?,?,?,?,?,?)",
                   (e.run_id, e.gen, e.main_before, e.main_after, e.policy, e.control_score, e.control_low,
                    e.control_high, ",".join(e.dominant)))
    elif isinstance(e, CandidateCreated):
        db.execute("INSERT OR REPLACE INTO candidates (cand_id, run_id, gen, k, branch, commit_sha, title, kind, "
                   "skills) VALUES (?,?,?,?,?,?,?,?,?)",
                   (e.cand_id, e.run_id, e.gen, e.k, e.branch, e.commit, e.title, e.kind, ",".join(e.skills)))
    elif isinstance(e, Repaired) and e.commit:
        db.execute("UPDATE candidates SET commit_sha=? WHERE cand_id=?", (e.commit, e.cand_id))
    elif isinstance(e, StageDone):
        db.execute("INSERT OR REPLACE INTO stages VALUES (?,?,?,?,?,?)",
                   (e.cand_id, e.stage, int(e.passed), e.reason, e.seconds, json.dumps(e.metrics, sort_keys=True)))
    elif isinstance(e, VerdictRecorded):
        ci: list[float | None] = list(e.ci) if e.ci else [None, None]
        db.execute("UPDATE candidates SET verdict=?, stage=?, reason=?, delta=?, ci_low=?, ci_high=? WHERE cand_id=?",
                   (e.verdict, e.stage, e.reason, e.delta, ci[0], ci[1], e.cand_id))
    elif isinstance(e, Merged):
        db.execute("UPDATE candidates SET merge_commit=? WHERE cand_id=?", (e.merge_commit, e.cand_id))
    elif isinstance(e, RunDone):
        db.execute("UPDATE runs SET status=?, final_main=? WHERE run_id=?", ("done", e.final_main, e.run_id))


def query(run_dir: Path, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    path = run_dir / INDEX
    if not path.exists():
        rebuild_index(run_dir)
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def lineage_json(run_dir: Path) -> str:
    """`lineage --json`: the run, its generations and every candidate with its stages (columns as keys)."""
    runs = [dict(r) for r in query(run_dir, "SELECT * FROM runs")]
    generations = [dict(r) for r in query(run_dir, "SELECT * FROM generations ORDER BY gen")]
    stages: dict[str, list[dict[str, Any]]] = {}
    for r in query(run_dir, "SELECT * FROM stages ORDER BY rowid"):
        row = dict(r)
        row["passed"] = bool(row["passed"])
        row["metrics"] = json.loads(row["metrics"] or "{}")
        stages.setdefault(row.pop("cand_id"), []).append(row)
    candidates = []
    for r in query(run_dir, "SELECT * FROM candidates ORDER BY gen, k"):
        row = dict(r)
        row["skills"] = [s for s in (row["skills"] or "").split(",") if s]
        row["stages"] = stages.get(row["cand_id"], [])
        candidates.append(row)
    return json.dumps({"run": runs[0] if runs else None, "generations": generations, "candidates": candidates},
                      indent=2)


def check_against_git(run_dir: Path, repo: git.Repo) -> list[str]:
    """Disagreements between the index and the harness repo (empty = consistent)."""
    problems = []
    pruned = archived(run_dir)
    for row in query(run_dir, "SELECT * FROM candidates"):
        if not row["branch"]:
            continue  # failed before it had a branch: nothing in git to compare
        try:
            head = repo.commit(row["branch"]).hexsha
        except (git.BadName, ValueError):
            if row["branch"] not in pruned:
                problems.append(f"{row['cand_id']}: branch {row['branch']} is missing")
                continue
            head = pruned[row["branch"]]  # `meta-agent prune` archived it
        if head != row["commit_sha"]:
            problems.append(f"{row['cand_id']}: branch at {head[:12]}, index says {row['commit_sha'][:12]}")
        merged = bool(row["merge_commit"]) and is_merged(repo, row["merge_commit"])
        if (row["verdict"] == "promoted") != merged:
            problems.append(f"{row['cand_id']}: verdict {row['verdict']} but its merge is in main = {merged}")
    return problems


def check_run(run_dir: Path, repo: git.Repo) -> list[str]:
    """Everything `lineage --check` compares: the index with git, the journal with itself and with the
    index, every verdict and merge with its git note, and the user's checkout with main."""
    log = EventLog(run_dir, repair=False)
    problems = check_against_git(run_dir, repo)
    if log.torn:
        problems.append(f"the journal ends in a torn line ({len(log.torn)} bytes): `meta-agent resume` sets it aside "
                        "and redoes that step")
    keys = [r.key for r in log.records if r.key]
    problems += [f"the journal records step {k} twice" for k in sorted({k for k in keys if keys.count(k) > 1})]
    status = [row["status"] for row in query(run_dir, "SELECT status FROM runs")]
    if log.of_type(RunDone) and status != ["done"]:
        problems.append("the index says the run is not done but the journal finished it: rebuild with --rebuild")
    created = {c.cand_id: with_repairs(log, c) for c in log.of_type(CandidateCreated)}
    final = {v.cand_id: v for v in log.of_type(VerdictRecorded)}
    for cand_id, v in final.items():
        commit = created[cand_id].commit if cand_id in created else None
        if commit is None:
            continue
        note = read_note(repo, commit)
        recorded = json.loads(note).get("verdict", {}).get("verdict") if note else None
        if recorded != v.verdict:
            problems.append(f"{cand_id}: its git note says {recorded or 'nothing'}, the journal says {v.verdict}")
    for m in log.of_type(Merged):
        if read_note(repo, m.merge_commit) is None:
            problems.append(f"{m.cand_id}: its merge {m.merge_commit[:12]} has no git note")
    if not repo.bare and not repo.head.is_detached and repo.active_branch.name == "main" and \
            repo.is_dirty(untracked_files=False):
        problems.append(f"the checkout of main in {repo.working_dir} differs from main (a merge that did not reach "
                        "the files, or edits of your own): `meta-agent resume` brings an untouched one up to date")
    return problems
