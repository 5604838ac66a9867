"""A generation's second and later winners: tested together with the winners merged before them.

Each winner was backtested against the generation's starting main. Once one is merged, main has
moved: a later winner may conflict with it, or merge cleanly and still break or undo it. So a
later winner is first made to sit on the new main (merged as is when git can, else re-implemented
there by its proposer, which for a skill means re-applying it), then that combination goes through
the cascade again against the new main (replay at least; train for a performance change, and
there it must not fall below what the winners merged before it reached). A combination that
cannot be made or fails, or whose making raises (its proposer, the new main's replay), is recorded
with verdict `conflict` and the reason; the run goes on.
"""

from __future__ import annotations

import dataclasses

from meta_agent.agents.base import Hypothesis
from meta_agent.backtest.gate import decide
from meta_agent.contract import ReplayRecord, read_jsonl
from meta_agent.errors import BudgetExhausted, failure_text
from meta_agent.evolve.candidate import CandidateRun, GenerationView
from meta_agent.evolve.context import RunContext
from meta_agent.gitops import MergeConflict, export_tree, merge_commit
from meta_agent.harness_runner import HarnessRunner
from meta_agent.journal import CandidateCreated, Combined, MainReplayed
from meta_agent.journal_keys import COMBINED, cand_dir, cand_key
from meta_agent.verdicts import Verdict
from meta_agent.workspace import implement

TAG = COMBINED


def _made(ctx: RunContext, view: GenerationView, k: int, h: Hypothesis, created: CandidateCreated, new_main: str
          ) -> Combined:
    """The winner on top of `new_main`: a clean merge, else its proposer's re-implementation there."""
    assert created.commit is not None
    try:
        merged = merge_commit(ctx.repo, created.branch, f"Combine {created.branch} with main",
                              when=ctx.when(cand_key(view.g, k, "merge", tag=TAG)))
        ctx.repo.git.update_ref(f"refs/meta-agent/combined/{created.cand_id}", merged)  # kept from gc until merged
        return Combined(cand_id=created.cand_id, how="merge", commit=merged, branch=created.branch)
    except MergeConflict as e:
        conflict = str(e)
    branch = f"{created.branch}-rebased"
    commit, outcome = implement(
        repo=ctx.repo, base=new_main, branch=branch, cand_id=created.cand_id, hypothesis=h, proposer=ctx.proposer,
        sandbox=ctx.sandbox, limits=ctx.cfg.sandbox.limits(), work=view.dir / cand_dir(k, TAG) / "edit",
        kit_dir=ctx.kit_dir, readable=[lib.root for lib in ctx.skills.libraries],
        when=ctx.when(cand_key(view.g, k, "rebase", tag=TAG)), rollouts=view.replay_set.session_path,
        tasks=ctx.tasks_file, evidence=view.evidence)
    if commit is None:
        return Combined(cand_id=created.cand_id, how="conflict", commit=None, branch="",
                        reason=f"{conflict}; re-implementing it on the new main failed: {outcome.reason}")
    return Combined(cand_id=created.cand_id, how="rebased", commit=commit, branch=branch)


def _replay_of(ctx: RunContext, view: GenerationView, new_main: str, i: int) -> dict[str, ReplayRecord]:
    """The new main's replay of the generation's set: the baseline its combinations are compared with."""
    out = view.dir / f"main-replay-{i}" / "replay.jsonl"

    def run() -> MainReplayed:
        work = export_tree(ctx.repo, new_main, view.dir / f"work-replay-{i}")
        with HarnessRunner(ctx.sandbox, work, commit=new_main, readable=[view.replay_set.path.parent,
                                                                          ctx.tasks_file.parent],
                           writable=[out.parent], limits=ctx.cfg.sandbox.limits(), domain=ctx.domain) as h:
            replayed = h.replay(rollouts=view.replay_set.path, tasks=ctx.tasks_file, out=out,
                                expected=view.replay_set.ids)
        probes = [r for r in replayed if r.rollout_id in view.replay_set.probes]
        return MainReplayed(probes_rewarded=sum(r.reward > 0 for r in probes) / len(probes) if probes else None)

    ctx.step(view.key("merge", f"main-replay-{i}"), MainReplayed, run)
    return {r.rollout_id: r for r in read_jsonl(out, ReplayRecord)}


def combine(ctx: RunContext, view: GenerationView, k: int, h: Hypothesis, alone: Verdict, created: CandidateCreated,
            new_main: str, i: int, best_delta: float | None) -> tuple[Verdict, Combined]:
    """Test winner k on top of `new_main`; the verdict is `promoted` (merge what `Combined` names) or `conflict`."""
    try:
        return _combine(ctx, view, k, h, alone, created, new_main, i, best_delta)
    except (BudgetExhausted, KeyboardInterrupt):
        raise
    except Exception as e:  # one winner's combination failing is that candidate's, never the run's
        reason = f"combining it with the winners merged before it raised {failure_text(e)}"
        return (alone.model_copy(update={"verdict": "conflict", "stage": "merge", "reason": reason}),
                Combined(cand_id=created.cand_id, how="conflict", commit=None, branch="", reason=reason))


def _combine(ctx: RunContext, view: GenerationView, k: int, h: Hypothesis, alone: Verdict, created: CandidateCreated,
             new_main: str, i: int, best_delta: float | None) -> tuple[Verdict, Combined]:
    ctx.reporter.phase(f"gen {view.g}: candidate {k}: combining with the winners merged before it")
    made = ctx.step(cand_key(view.g, k, "made", tag=TAG), Combined, lambda: _made(ctx, view, k, h, created, new_main))
    conflict = alone.model_copy(update={"verdict": "conflict", "stage": "merge"})
    if made.commit is None:
        return conflict.model_copy(update={"reason": made.reason}), made
    baseline = dataclasses.replace(view, main_before=new_main, main_replay=_replay_of(ctx, view, new_main, i))
    run = CandidateRun(ctx, baseline, k, h, tag=TAG)
    stages = run.cascade(made.commit, new_main)  # trains now: it returns every stage it ran
    assert isinstance(stages, list)
    together = decide(alone.cand_id, h.kind, stages, view.noise_floor, ctx.cfg.gate)
    how = "merged as is" if made.how == "merge" else "re-implemented on the new main"
    if not together.promoted:
        return conflict.model_copy(update={"reason": f"together with the winners merged before it ({how}): "
                                                     f"{together.reason}"}), made
    if together.kind == "performance" and best_delta is not None and together.delta is not None \
            and together.delta < best_delta - view.noise_floor:
        return conflict.model_copy(update={"reason": (
            f"together with the winners merged before it ({how}) the paired delta is {together.delta:+.3f}, below "
            f"the {best_delta:+.3f} they reached alone: it undoes them")}), made
    # No timing in the reason: it becomes the merge commit's message, which a resumed run must rewrite identically.
    return together.model_copy(update={"reason": f"{alone.reason}; re-tested on top of the earlier winners ({how}): "
                                                 f"{together.reason}"}), made
