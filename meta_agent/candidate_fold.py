"""A candidate as the journal says it stands, folded once: the one read model of "a candidate as it ended".

The archive (which candidates may be built on), the run summary and the lineage page all read candidates
through `fold_candidates`; none folds the journal itself. (The SQLite index applies the same events one by
one as it is rebuilt, and `history`/`show` read git notes and trailers, so that they work on a harness repo
without its run directory.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from meta_agent.eventlog import EventLog
from meta_agent.journal import CandidateCreated, Combined, Merged, Repaired, StageDone, VerdictRecorded


@dataclass
class CandidateState:
    created: CandidateCreated
    """As created, with `commit` moved to its last repair's commit when a repair made one."""
    verdict: VerdictRecorded | None = None
    """The last verdict (a winner re-tested at merge has two); None while it runs or when it was not built."""
    verdict_order: int | None = None
    """Where its first verdict stands in the journal (the summary lists candidates in decision order)."""
    stages: list[StageDone] = field(default_factory=list)
    """Its own stages in journal order (a combination's, filed under `cand_id+combined`, are not here)."""
    combined: str | None = None
    """How it was last combined with its generation's earlier winners (merge, rebased, conflict), if it was."""
    merge_commit: str | None = None

    @property
    def cand_id(self) -> str:
        return self.created.cand_id

    @property
    def commit(self) -> str | None:
        return self.created.commit


def fold_candidates(log: EventLog) -> dict[str, CandidateState]:
    """Every candidate the run created, by id, in the order they were created (a step journaled again on a
    resume counts once, as its last line says)."""
    out: dict[str, CandidateState] = {}
    repaired: dict[str, str] = {}
    verdicts = 0
    for record in log.records:
        e = record.event
        if isinstance(e, CandidateCreated):
            state = out.get(e.cand_id)
            if state is None:
                out[e.cand_id] = CandidateState(created=e)
            else:
                state.created = e
        elif isinstance(e, Repaired) and e.commit:
            repaired[e.cand_id] = e.commit
        elif isinstance(e, StageDone) and e.cand_id in out:
            out[e.cand_id].stages.append(e)
        elif isinstance(e, VerdictRecorded) and e.cand_id in out:
            state = out[e.cand_id]
            state.verdict = e
            if state.verdict_order is None:
                state.verdict_order, verdicts = verdicts, verdicts + 1
        elif isinstance(e, Combined) and e.cand_id in out:
            out[e.cand_id].combined = e.how
        elif isinstance(e, Merged) and e.cand_id in out:
            out[e.cand_id].merge_commit = e.merge_commit
    for cand_id, commit in repaired.items():
        if cand_id in out:
            out[cand_id].created = out[cand_id].created.model_copy(update={"commit": commit})
    return out
