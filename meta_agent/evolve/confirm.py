"""Successive halving in two rungs: every performance candidate gets the short train stage (`steps`);
the `confirm_top` best by paired delta that the gate did not promote on it (and that did not score
below the control: a delta of exactly 0 is common when a short run barely moves the policy) train
`confirm_steps` more steps from where they stopped, beside the control trained as much more under
main, and the gate judges that longer run.

So many ideas get a cheap look and the few that moved the score get enough training for the gate to
see a delta above the noise, without paying the long run for every idea. The policy the next
generation starts from is still a run of `steps` (the winner's first-rung checkpoint): the longer
rung is search compute, reported as such, never extra training for the evolved policy.

Both rungs are tests of the same family: with confirmation on, every CI is taken at the Bonferroni level
over the run's generations x (K + confirm_top) tests, so the run-wide false-merge rate stays at
`family_alpha`.
"""

from __future__ import annotations

import dataclasses

from meta_agent.agents.base import Hypothesis
from meta_agent.backtest.gate import decide
from meta_agent.backtest.train_stage import Control, invalid_share
from meta_agent.domains.base import EvalResult
from meta_agent.evolve.candidate import CandidateRun, GenerationView, note_for, stages_of
from meta_agent.evolve.context import RunContext
from meta_agent.evolve.fanout import run_backtests
from meta_agent.evolve.search_budget import confirmable
from meta_agent.evolve.steps import evaluate, evaluated, train_and_report
from meta_agent.execution.jobs import JobEnv, TrainJob, run_train_job
from meta_agent.gitops import add_note
from meta_agent.journal import CandidateCreated, Evaluated, StageDone, Trained, VerdictRecorded, with_repairs
from meta_agent.journal_keys import cand_key
from meta_agent.training import load_trained
from meta_agent.verdicts import Verdict, train_evidence

CONTINUE_SEED = 20_000
"""Offset of the longer rung's sampling seed: both arms continue with the same one (paired)."""


def _last(ctx: RunContext, cand_id: str, stage: str) -> StageDone | None:
    """The candidate's latest journaled result of `stage` (after a repair turn, the repaired commit's)."""
    return next((s for s in reversed(stages_of(ctx.log, cand_id)) if s.stage == stage), None)


def _promising(ctx: RunContext, view: GenerationView, verdicts: list[Verdict]) -> list[int]:
    """Candidates rejected at the gate on the short rung, not below the control, with no more invalid
    rollouts than it (a longer run does not fix a reward the diagnostics flag), best delta first."""
    out = []
    for k, v in enumerate(verdicts):
        if v.verdict != "rejected" or v.stage != "gate" or v.kind != "performance" or v.delta is None or v.delta < 0:
            continue
        train = _last(ctx, v.cand_id, "train")
        m = train_evidence(train.metrics) if train is not None else None
        if m is None or m.invalid_share > m.control_invalid_share + ctx.cfg.gate.invalid_margin:
            continue
        out.append(k)
    out.sort(key=lambda k: -(verdicts[k].delta or 0.0))
    return out[:ctx.cfg.confirm_top]


def _longer_control(ctx: RunContext, view: GenerationView) -> Control:
    """Main's run of this generation, trained `confirm_steps` more under main, and its selection score."""
    out = view.dir / "confirm-control"
    seed = view.seed + CONTINUE_SEED
    ctx.reporter.phase(f"gen {view.g}: confirmation rung: training the control {ctx.cfg.confirm_steps} more steps")
    ctx.step(view.key("confirm", "control-train"), Trained, lambda: train_and_report(
        ctx, view.main_before, view.control.run.checkpoint, seed, view.history, out, view.dir / "work-confirm",
        steps=ctx.cfg.confirm_steps))
    run = load_trained(out, ctx.domain, str(ctx.root_policy), ctx.tasks_file)
    ctx.step(view.key("confirm", "control-eval"), Evaluated, lambda: evaluated(evaluate(
        ctx, run.checkpoint, out / "eval.json", limit=ctx.cfg.selection_limit)))
    result = EvalResult.model_validate_json((out / "eval.json").read_text())
    return Control(run=run, eval=result, invalid_share=invalid_share(run, ctx.domain.invalid_labels))


def _confirm_job(ctx: RunContext, view: GenerationView, run: CandidateRun, short: Verdict) -> TrainJob:
    """The candidate's longer run as a job: its commit (after repairs) continued from its short-rung
    checkpoint with the continuation seed, judged against the longer control."""
    created = ctx.log.done(run.key("created"), CandidateCreated)
    assert created is not None and created.commit, f"candidate {short.cand_id} reached the gate without a commit"
    commit = with_repairs(ctx.log, created).commit
    assert commit is not None
    stage = _last(ctx, short.cand_id, "train")
    train = train_evidence(stage.metrics) if stage is not None else None
    assert train is not None, f"{short.cand_id} reached the gate without a measured train stage"
    control = view.dir / "confirm-control"
    return run.train_job(commit, run.key("confirm")).model_copy(update={
        "rung": "confirm", "policy": train.checkpoint, "seed": view.seed + CONTINUE_SEED,
        "ci_seed": view.seed, "steps": ctx.cfg.confirm_steps, "total_steps": ctx.cfg.steps + ctx.cfg.confirm_steps,
        "control_dir": str(control), "control_eval": str(control / "eval.json")})


def confirm(ctx: RunContext, view: GenerationView, verdicts: list[Verdict], hypotheses: list[Hypothesis]
            ) -> list[Verdict]:
    """The generation's verdicts after the longer rung (unchanged when `confirm_steps` is 0)."""
    if ctx.cfg.confirm_steps == 0:
        return verdicts
    promising = _promising(ctx, view, verdicts)
    chosen = confirmable(ctx.cfg, ctx.run_dir, view.dir, promising)
    if len(chosen) < len(promising):
        ctx.reporter.phase(f"gen {view.g}: the search-step budget ({ctx.cfg.search_steps} GRPO steps) pays the "
                           f"confirmation rung for {len(chosen)} of {len(promising)} promising candidate(s)")
    if not chosen:
        return verdicts
    control = _longer_control(ctx, view)
    longer = dataclasses.replace(view, control=control)
    todo = [k for k in chosen if ctx.log.done(cand_key(view.g, k, "confirmed"), VerdictRecorded) is None]
    runs = {k: CandidateRun(ctx, longer, k, hypotheses[k]) for k in todo}
    jobs = {k: _confirm_job(ctx, longer, runs[k], verdicts[k]) for k in todo}
    run_backtests(ctx, view.g, list(jobs.values()))  # the chosen candidates' longer runs side by side
    final = list(verdicts)
    for k in chosen:
        done = ctx.log.done(cand_key(view.g, k, "confirmed"), VerdictRecorded)
        if done is None:
            done = _confirm_one(ctx, longer, runs[k], jobs[k], hypotheses[k], verdicts[k])
        final[k] = done.verdict_only()
    return final


def _confirm_one(ctx: RunContext, view: GenerationView, run: CandidateRun, job: TrainJob, h: Hypothesis,
                 short: Verdict) -> VerdictRecorded:
    static, replay = _last(ctx, short.cand_id, "static"), _last(ctx, short.cand_id, "replay")
    assert static is not None and replay is not None, f"{short.cand_id} reached the gate without static or replay"
    env = JobEnv(domain=ctx.domain, sandbox=ctx.sandbox, repo=ctx.repo, on_step=ctx.reporter.training_step,
                 on_eval=ctx.reporter.tasks_answered)
    stage = run.stage("confirm", lambda: run_train_job(job, env))  # journaled by the fan-out, unless it stopped
    judged = stage.model_copy(update={"stage": "train"})  # the gate reads the longest run as the train evidence
    verdict = decide(short.cand_id, h.kind, [static.result(), replay.result(), judged], view.noise_floor,
                     ctx.cfg.gate)
    if not stage.passed:
        verdict = verdict.model_copy(update={"stage": "confirm"})
    verdict = verdict.model_copy(update={"reason": (
        f"{short.reason}; on the confirmation rung ({ctx.cfg.steps}+{ctx.cfg.confirm_steps} steps, control "
        f"trained as long): {verdict.reason}")})
    add_note(ctx.repo, job.commit, note_for(verdict, ctx.log))
    record = VerdictRecorded(**verdict.model_dump(), title=h.title, skills=h.skills_used, params=h.params)
    ctx.log.append(record, key=cand_key(view.g, run.k, "confirmed"))
    return record
