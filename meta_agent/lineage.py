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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import git
from pydantic import ValidationError

from meta_agent.errors import RunDirError, UserError
from meta_agent.gitops import is_merged
from meta_agent.journal import (
    EVENT_TYPES,
    CandidateCreated,
    Event,
    GenerationDone,
    Merged,
    RunDone,
    RunStarted,
    StageDone,
    VerdictRecorded,
)

EVENTS = "events.jsonl"
INDEX = "lineage.sqlite"


E = TypeVar("E", bound=Event)


class JournalError(UserError, RuntimeError):
    """The journal holds something this version cannot read (another version's run, a hand edit)."""


@dataclass(frozen=True)
class Record:
    """One journal line: the event and where it sits."""

    seq: int
    time: str
    key: str | None
    event: Event


class EventLog:
    """Append-only JSONL of typed events; a torn last line (killed mid-write) is ignored and overwritten."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / EVENTS
        self.records: list[Record] = []
        self._by_key: dict[str, Record] = {}
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        good = 0
        with self.path.open("rb") as f:
            for lineno, raw in enumerate(f, start=1):
                try:
                    line = json.loads(raw)
                except json.JSONDecodeError:
                    break  # a line cut by a kill: everything before it is intact
                good += len(raw)
                self._remember(self._parse(line, lineno))
        if good != self.path.stat().st_size:
            with self.path.open("r+b") as f:
                f.truncate(good)

    def _parse(self, line: dict[str, Any], lineno: int) -> Record:
        model = EVENT_TYPES.get(line.get("type", ""))
        if model is None:
            raise JournalError(f"{self.path}:{lineno}: unknown event type {line.get('type')!r} "
                               f"(known: {', '.join(sorted(EVENT_TYPES))}); was the run made by another version?")
        try:
            event = model.model_validate(line["data"])
        except (ValidationError, KeyError) as e:
            raise JournalError(f"{self.path}:{lineno}: invalid {model.TYPE} event: {e}") from e
        return Record(seq=int(line["seq"]), time=str(line["time"]), key=line.get("key"), event=event)

    def _remember(self, record: Record) -> None:
        self.records.append(record)
        if record.key:
            self._by_key[record.key] = record

    def append(self, event: Event, key: str | None = None) -> Event:
        record = Record(seq=len(self.records), time=time.strftime("%Y-%m-%dT%H:%M:%S"), key=key, event=event)
        line = json.dumps({"seq": record.seq, "time": record.time, "type": event.TYPE, "key": key,
                           "data": event.model_dump(mode="json")}, sort_keys=True) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self._remember(record)
        return event

    def done(self, key: str, model: type[E]) -> E | None:
        """The event recorded when step `key` finished, or None if it has not finished."""
        record = self._by_key.get(key)
        if record is None:
            return None
        if not isinstance(record.event, model):
            raise JournalError(f"{self.path}: step {key} recorded a {record.event.TYPE} event, expected {model.TYPE}")
        return record.event

    def finished(self, key: str) -> bool:
        return key in self._by_key

    def of_type(self, model: type[E]) -> list[E]:
        return [r.event for r in self.records if isinstance(r.event, model)]

    def keyed(self, prefix: str) -> list[Record]:
        """Records whose key starts with `prefix` (e.g. `g1/`), in order."""
        return [r for r in self.records if r.key and r.key.startswith(prefix)]


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
    if not (run_dir / EVENTS).is_file():
        raise RunDirError(f"{run_dir} holds no evolve run (no {EVENTS}); give the directory `meta-agent evolve` "
                          "printed as its run")
    log = EventLog(run_dir)
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


def check_against_git(run_dir: Path, repo: git.Repo) -> list[str]:
    """Disagreements between the index and the harness repo (empty = consistent)."""
    problems = []
    for row in query(run_dir, "SELECT * FROM candidates"):
        if not row["branch"]:
            continue  # failed before it had a branch: nothing in git to compare
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
