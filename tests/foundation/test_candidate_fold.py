"""The one read model: a candidate as the journal says it stands, whatever order its events came in."""

from __future__ import annotations

from pathlib import Path

from meta_agent.candidate_fold import fold_candidates
from meta_agent.eventlog import EventLog
from meta_agent.journal import CandidateCreated, Combined, Merged, Repaired, StageDone, VerdictRecorded

RUN = "r"


def _created(k: int, commit: str | None = "c0") -> CandidateCreated:
    return CandidateCreated(cand_id=f"{RUN}/0-{k}", run_id=RUN, gen=0, k=k, branch=f"cand/{RUN}/0-{k}",
                            commit=commit, ok=commit is not None, reason="", title=f"t{k}", kind="performance",
                            skills=["s"])


def _verdict(k: int, verdict: str, stage: str = "gate") -> VerdictRecorded:
    return VerdictRecorded.model_validate({"cand_id": f"{RUN}/0-{k}", "verdict": verdict, "stage": stage,
                                           "reason": verdict, "kind": "performance", "delta": 0.1})


def test_the_fold_keeps_creation_order_last_verdicts_repairs_and_merges(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append(_created(0), key="g0/c0/created")
    log.append(_created(1), key="g0/c1/created")
    log.append(_created(2, commit=None), key="g0/c2/created")
    log.append(StageDone(cand_id=f"{RUN}/0-1", stage="static", passed=False, reason="x"), key="g0/c1/static")
    log.append(Repaired(cand_id=f"{RUN}/0-1", attempt=1, failed_stage="static", commit="c1-fixed",
                        reason=""),
               key="g0/c1/repair-1")
    log.append(StageDone(cand_id=f"{RUN}/0-1", stage="static", passed=True, reason="ok"), key="g0/c1/static@1")
    log.append(StageDone(cand_id=f"{RUN}/0-1+combined", stage="train", passed=True, reason="ok"),
               key="g0/c1+combined/train")
    log.append(_verdict(1, "promoted"), key="g0/c1/verdict")  # decided first
    log.append(_verdict(0, "rejected"), key="g0/c0/verdict")
    log.append(Combined(cand_id=f"{RUN}/0-1", how="merge", commit="m", branch="b"), key="g0/c1+combined/made")
    log.append(_verdict(1, "conflict", stage="merge"), key="g0/c1/final")  # re-tested at merge
    log.append(Merged(cand_id=f"{RUN}/0-0", merge_commit="mc", branch="b"), key="g0/merge/c0")
    log.append(_created(0), key="g0/c0/created")  # a step journaled again after a resume counts once

    folded = fold_candidates(EventLog(tmp_path))
    assert list(folded) == [f"{RUN}/0-0", f"{RUN}/0-1", f"{RUN}/0-2"]
    c0, c1, c2 = folded.values()
    assert c1.commit == "c1-fixed", "a repair's commit is the candidate's"
    assert [s.stage for s in c1.stages] == ["static", "static"], "its own stages only, not its combination's"
    assert c1.verdict is not None and c1.verdict.verdict == "conflict", "the last verdict stands"
    assert (c1.verdict_order, c0.verdict_order, c2.verdict_order) == (0, 1, None), "decision order: the first"
    assert (c1.combined, c1.merge_commit, c0.merge_commit) == ("merge", None, "mc")
    assert c2.verdict is None and c2.commit is None
