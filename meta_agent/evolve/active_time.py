"""How long a run worked, as opposed to how long ago it started: the seconds between two moments, less the
downtime between a killed process and the `resume` that took the run up again (journaled as `Resumed`)."""

from __future__ import annotations

from meta_agent.eventlog import EventLog, Record
from meta_agent.journal import Resumed


def record_time(record: Record) -> float:
    """When a record was journaled: a resume's own exact start, else the record's time (to the second)."""
    return record.event.t if isinstance(record.event, Resumed) else record.epoch


def active_seconds(log: EventLog, since: float, until: float) -> float:
    """Seconds within [since, until] that some process spent on the run. Each process's share runs from
    its start (`since`, or its `Resumed` event) to its last journaled event, the current process's to
    `until`: work a killed process did after its last event left nothing behind and is not counted."""
    total, start, last = 0.0, since, since
    for record in log.records:
        t = record_time(record)
        if t <= since:
            continue
        if t > until:
            break
        if isinstance(record.event, Resumed):
            total += last - start
            start = last = t
        else:
            last = max(last, t)
    return total + max(0.0, until - start)


def run_seconds(log: EventLog) -> float:
    """A whole run's working seconds, from its first journaled event to its last, whatever number of
    processes (killed, resumed) it took."""
    if not log.records:
        return 0.0
    return active_seconds(log, record_time(log.records[0]), record_time(log.records[-1]))
