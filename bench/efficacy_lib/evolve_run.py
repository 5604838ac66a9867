"""What a finished (or stopped) evolve run found and spent, read from its journal: the benchmark keeps these
with its results, because bench/results keeps no runs."""

from __future__ import annotations

from pathlib import Path

from meta_agent.eventlog import EventLog
from meta_agent.journal import CandidateCreated, GenerationDone, Merged, RunStarted
from meta_agent.journal_keys import RUN_START


def sealed_of(run_dir: Path) -> str | None:
    """The fingerprint of the secret an evolve run drew its splits from (its journal's start)."""
    started = EventLog(run_dir).done(RUN_START, RunStarted)
    return started.sealed if started else None


def merged_titles(run_dir: Path) -> list[str]:
    """What the search found: the merged candidates' titles, from the evolve run's journal. A candidate built
    on an archived one (`archive_parents`) merged both changes, and its title says so."""
    log = EventLog(run_dir)
    created = {c.cand_id: c for c in log.of_type(CandidateCreated)}

    def title(cand_id: str, depth: int = 0) -> str:
        c = created.get(cand_id)
        if c is None:
            return cand_id
        if c.parent is None or depth == 8:
            return c.title
        return f"{c.title}, on {c.parent} ({title(c.parent, depth + 1)})"

    return [title(m.cand_id) for m in log.of_type(Merged)]


def generation_time(run_dir: Path) -> dict[str, float]:
    """The evolve run's journaled time per phase, summed over its generations (the final static arm and
    test evaluations are the rest of its wall time)."""
    log = EventLog(run_dir)
    total: dict[str, float] = {}
    g = 0
    while (done := log.done(f"g{g}/done", GenerationDone)) is not None:
        for phase in ("wall", "train", "eval", "proposer"):
            total[phase] = total.get(phase, 0.0) + float(done.time.get(phase, 0.0))
        g += 1
    return total


__all__ = ["generation_time", "merged_titles", "sealed_of"]
