"""The archive: every candidate this run evaluated, with its scores; parents for new candidates come from it.

A candidate that passed every stage and did not score below main, but whose delta was too small for
the gate, is an idea that did no harm and may need a partner. With `archive_parents` N, up to N of a
generation's K hypotheses (the lowest-ranked ones) are implemented on top of such a candidate (its
change merged onto the generation's main first) instead of on main alone:

- by score: the archived candidate with the highest paired delta (its last verdict's: after the
  confirmation rung when it had one) comes first;
- by novelty: never one whose skills overlap the hypothesis's (two values of one knob stacked test
  nothing new), and each archived candidate is a parent once per run.

The backtest then judges the pair against main like any candidate; a winner's merge brings both
changes. An archived change that no longer merges cleanly onto main is skipped with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from meta_agent.agents.base import Hypothesis
from meta_agent.candidate_fold import fold_candidates
from meta_agent.eventlog import EventLog
from meta_agent.evolve.context import RunContext
from meta_agent.gitops import ARCHIVE_MERGE, MergeConflict, is_merged, merge_commit
from meta_agent.journal import ParentsChosen


@dataclass(frozen=True)
class Entry:
    """One evaluated candidate, as its last verdict left it."""

    cand_id: str
    commit: str
    skills: tuple[str, ...]
    verdict: str
    stage: str
    kind: str
    delta: float | None

    @property
    def promising(self) -> bool:
        """Passed every stage, not below main, and only the gate's evidence bar stopped it."""
        return (self.verdict == "rejected" and self.stage == "gate" and self.kind == "performance"
                and self.delta is not None and self.delta >= 0)


def entries(log: EventLog) -> list[Entry]:
    """Every candidate of the run with a verdict, in the order they were created."""
    return [Entry(cand_id=c.cand_id, commit=c.commit, skills=tuple(c.created.skills), verdict=c.verdict.verdict,
                  stage=c.verdict.stage, kind=c.verdict.kind, delta=c.verdict.delta)
            for c in fold_candidates(log).values() if c.verdict is not None and c.commit is not None]


def choose_parents(ctx: RunContext, main: str, hypotheses: list[Hypothesis], when_key: str) -> ParentsChosen:
    """Parents for up to `archive_parents` hypotheses, each merged onto `main` (a commit kept by a ref)."""
    n = ctx.cfg.archive_parents
    used = {cand for chosen in ctx.log.of_type(ParentsChosen) for cand, _ in chosen.parents.values()}
    pool = [e for e in entries(ctx.log) if e.promising and e.cand_id not in used
            and not is_merged(ctx.repo, e.commit, main)]
    pool.sort(key=lambda e: -(e.delta or 0.0))  # stable: equal deltas keep creation order
    parents: dict[int, tuple[str, str]] = {}
    skipped: list[str] = []
    for k in reversed(range(len(hypotheses))):
        if len(parents) == n:
            break
        wanted = set(hypotheses[k].skills_used)
        for e in [e for e in pool if e.cand_id not in used and not wanted & set(e.skills)]:
            used.add(e.cand_id)
            try:
                commit = merge_commit(ctx.repo, e.commit, f"{ARCHIVE_MERGE}{e.cand_id}", target=main,
                                      when=ctx.when(f"{when_key}/{k}"))
            except MergeConflict as conflict:
                skipped.append(f"{e.cand_id}: {str(conflict)[:300]}")
                continue
            ctx.repo.git.update_ref(f"refs/meta-agent/parents/{e.cand_id}", commit)  # kept from gc
            parents[k] = (e.cand_id, commit)
            break
    return ParentsChosen(parents=parents, skipped=skipped)
