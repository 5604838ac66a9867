"""Lineage: an append-only event log (the run's journal) and a SQLite index rebuilt from it.

Every finished step of a run appends one fsync'd JSON line keyed by what it finished
(`g0/main-train`, `g1/c0/replay`, ...). `resume` replays the log and skips keys that are
already there, so a run killed at any point redoes only the step it was in. The SQLite
index is a view for queries (`meta-agent lineage`); it can always be rebuilt from the
log, and checked against the harness repo's branches and merges.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git

from meta_agent.gitops import is_merged

EVENTS = "events.jsonl"
INDEX = "lineage.sqlite"


class EventLog:
    """Append-only JSONL; a torn last line (killed mid-write) is ignored and overwritten."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / EVENTS
        self.events: list[dict[str, Any]] = []
        self._by_key: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        good = 0
        with self.path.open("rb") as f:
            for raw in f:
                try:
                    event = json.loads(raw)
                except json.JSONDecodeError:
                    break  # a line cut by a kill: everything before it is intact
                good += len(raw)
                self._remember(event)
        if good != self.path.stat().st_size:
            with self.path.open("r+b") as f:
                f.truncate(good)

    def _remember(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event.get("key"):
            self._by_key[event["key"]] = event

    def append(self, type_: str, data: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        event = {"seq": len(self.events), "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "type": type_,
                 "key": key, "data": data}
        line = json.dumps(event, sort_keys=True, default=str) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self._remember(event)
        return event

    def done(self, key: str) -> dict[str, Any] | None:
        """The data recorded when step `key` finished, or None if it has not finished."""
        event = self._by_key.get(key)
        return event["data"] if event else None

    def of_type(self, type_: str) -> Iterator[dict[str, Any]]:
        return (e for e in self.events if e["type"] == type_)


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
    log = EventLog(run_dir)
    path = run_dir / INDEX
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    db.executescript(SCHEMA)
    for e in log.events:
        _apply(db, e["type"], e["data"])
    db.commit()
    db.close()
    os.replace(tmp, path)
    return path


def _apply(db: sqlite3.Connection, type_: str, d: dict[str, Any]) -> None:
    if type_ == "run_started":
        db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?)",
                   (d["run_id"], d["domain"], d["harness"], d["started"], "running", d["root_policy"],
                    d["initial_main"], None))
    elif type_ == "generation_done":
        db.execute("INSERT OR REPLACE INTO generations VALUES (?,?,?,?,?,?,?,?,?)",
                   (d["run_id"], d["gen"], d["main_before"], d["main_after"], d["policy"], d["control_score"],
                    d["control_low"], d["control_high"], ",".join(d["dominant"])))
    elif type_ == "candidate_created":
        db.execute("INSERT OR REPLACE INTO candidates (cand_id, run_id, gen, k, branch, commit_sha, title, kind, "
                   "skills) VALUES (?,?,?,?,?,?,?,?,?)",
                   (d["cand_id"], d["run_id"], d["gen"], d["k"], d["branch"], d["commit"], d["title"], d["kind"],
                    ",".join(d["skills"])))
    elif type_ == "stage_done":
        db.execute("INSERT OR REPLACE INTO stages VALUES (?,?,?,?,?,?)",
                   (d["cand_id"], d["stage"], int(d["passed"]), d["reason"], d["seconds"],
                    json.dumps(d.get("metrics", {}), sort_keys=True)))
    elif type_ == "verdict":
        ci = d.get("ci") or [None, None]
        db.execute("UPDATE candidates SET verdict=?, stage=?, reason=?, delta=?, ci_low=?, ci_high=? WHERE cand_id=?",
                   (d["verdict"], d["stage"], d["reason"], d.get("delta"), ci[0], ci[1], d["cand_id"]))
    elif type_ == "merged":
        db.execute("UPDATE candidates SET merge_commit=? WHERE cand_id=?", (d["merge_commit"], d["cand_id"]))
    elif type_ == "run_done":
        db.execute("UPDATE runs SET status=?, final_main=? WHERE run_id=?", ("done", d["final_main"], d["run_id"]))


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


def check_against_git(run_dir: Path, repo: git.Repo) -> list[str]:
    """Disagreements between the index and the harness repo (empty = consistent)."""
    problems = []
    for row in query(run_dir, "SELECT * FROM candidates"):
        try:
            head = repo.commit(row["branch"]).hexsha
        except (git.BadName, ValueError):
            problems.append(f"{row['cand_id']}: branch {row['branch']} is missing")
            continue
        if head != row["commit_sha"]:
            problems.append(f"{row['cand_id']}: branch at {head[:12]}, index says {row['commit_sha'][:12]}")
        merged = is_merged(repo, row["commit_sha"])
        if (row["verdict"] == "promoted") != merged:
            problems.append(f"{row['cand_id']}: verdict {row['verdict']} but merged into main = {merged}")
    return problems
