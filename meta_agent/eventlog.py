"""The run journal on disk: an append-only JSONL of typed events, one fsync'd line per finished step.

A kill can leave the last line torn (written without its final newline, or cut in the middle). On
load that tail is recognised whatever its shape, set aside in `events.jsonl.torn-N` and reported in
`repairs`: its step was not finished and is redone. Nothing else ever shortens the journal: a bad
line anywhere before the end is an error naming it, never a silent cut. Appends always start on a
fresh line. Readers that must not change anything (the lineage index, `lineage --check`, reports)
open it with `repair=False`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from meta_agent.errors import RunDirError, UserError
from meta_agent.journal import EVENT_TYPES, Event

EVENTS = "events.jsonl"
E = TypeVar("E", bound=Event)


class JournalError(UserError, RuntimeError):
    """The journal holds something this version cannot read (another version's run, a hand edit)."""


TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
"""A record's `time`: local time, to the second."""


@dataclass(frozen=True)
class Record:
    """One journal line: the event and where it sits."""

    seq: int
    time: str
    key: str | None
    event: Event

    @property
    def epoch(self) -> float:
        """`time` as seconds since the epoch."""
        return time.mktime(time.strptime(self.time, TIME_FORMAT))



def require_run(run_dir: Path) -> None:
    """RunDirError unless `run_dir` holds an evolve run's journal (what every command reading one checks first)."""
    if not (run_dir / EVENTS).is_file():
        raise RunDirError(f"{run_dir} holds no evolve run (no {EVENTS}); give the directory `meta-agent evolve` "
                          "printed as its run")

class EventLog:
    """Append-only JSONL of typed events (see the module docstring for torn lines)."""

    def __init__(self, run_dir: Path, *, repair: bool = True) -> None:
        self.path = run_dir / EVENTS
        self.records: list[Record] = []
        self.repairs: list[str] = []
        """What loading fixed (a dropped torn tail), for `resume` to say."""
        self.torn: bytes = b""
        """A torn last line found on load (kept, not removed, when repair=False)."""
        self._by_key: dict[str, Record] = {}
        if self.path.exists():
            self._load(repair)

    def _load(self, repair: bool) -> None:
        data = self.path.read_bytes()
        *complete, tail = data.split(b"\n")
        for lineno, raw in enumerate(complete, start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except json.JSONDecodeError as e:
                raise JournalError(
                    f"{self.path}:{lineno}: not a journal line ({e.msg}); lines after it would be lost if it were "
                    "dropped, so nothing was changed. Inspect it (a hand edit? two lines glued by an old version?) "
                    "and fix or remove that line by hand.") from None
            self._remember(self._parse(line, lineno))
        if tail:
            self.torn = tail
            if repair:
                self._set_aside(len(data) - len(tail))
                self.torn = b""

    def _set_aside(self, keep: int) -> None:
        n = 1
        while (backup := self.path.with_name(f"{EVENTS}.torn-{n}")).exists():
            n += 1
        backup.write_bytes(self.torn)
        with self.path.open("r+b") as f:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        self.repairs.append(f"set aside a torn last journal line ({len(self.torn)} bytes, kept in {backup.name}): "
                            "the step it recorded was not finished and is redone")

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
        if self.torn:
            raise JournalError(f"{self.path} ends in a torn line; open it with repair=True before appending")
        record = Record(seq=len(self.records), time=time.strftime(TIME_FORMAT), key=key, event=event)
        line = json.dumps({"seq": record.seq, "time": record.time, "type": event.TYPE, "key": key,
                           "data": event.model_dump(mode="json")}, sort_keys=True) + "\n"
        with self.path.open("ab") as f:
            if f.tell() > 0 and not _ends_with_newline(self.path):
                f.write(b"\n")  # never glue a line onto one that lost its end
            f.write(line.encode("utf-8"))
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


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"
