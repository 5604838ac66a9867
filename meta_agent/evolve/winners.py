"""After a generation's candidates: merge the winners into main, record skill evidence, learn skills."""

from __future__ import annotations

import functools
import shutil
import time
from pathlib import Path

from meta_agent.agents.base import Hypothesis, Outcome
from meta_agent.crashpoints import crashpoint
from meta_agent.domains import domain_entry
from meta_agent.errors import BudgetExhausted, failure_text
from meta_agent.evolve.candidate import GenerationView, note_for, stages_of
from meta_agent.evolve.combine import combine
from meta_agent.evolve.context import RunContext
from meta_agent.evolve.skill_trial import REFUSED_DIR, trial
from meta_agent.gitops import add_note, format_message, is_merged, merge_no_ff, sync_checkout
from meta_agent.journal import (
    CandidateCreated,
    Combined,
    Merged,
    SkillEvidence,
    SkillWritten,
    StageDone,
    VerdictRecorded,
    with_repairs,
)
from meta_agent.journal_keys import COMBINED, cand_dir, cand_key, gen_dir, merge_key
from meta_agent.skills.evidence import evidence_verdict
from meta_agent.skills.evidence import record as record_evidence
from meta_agent.skills.known import skill_digest
from meta_agent.skills.model import Evidence
from meta_agent.skills.store import SkillError, UnknownSkill, load_skill
from meta_agent.skills.variants import params_of
from meta_agent.training import TrainedRun
from meta_agent.verdicts import Verdict, train_evidence


def merge_winners(ctx: RunContext, view: GenerationView, verdicts: list[Verdict], hypotheses: list[Hypothesis],
                  control_run: TrainedRun) -> tuple[list[Verdict], str]:
    """Merge winners into main one at a time, best first; a winner after the first is re-tested on top of
    those merged before it (`combine`) and merged only if that holds. Returns the final verdicts (a winner
    that could not be combined becomes `conflict`) and the policy the next generation starts from."""
    g = view.g
    final = list(verdicts)
    winners = [(k, v) for k, v in enumerate(verdicts) if v.promoted]
    winners.sort(key=lambda kv: (kv[1].kind == "performance", -(kv[1].delta or 0.0)))
    merged: list[tuple[int, Verdict]] = []
    next_policy = str(control_run.checkpoint)
    for i, (k, v) in enumerate(winners):
        created = _candidate(ctx, g, k)
        assert created is not None and created.commit, f"promoted candidate {v.cand_id} has no commit"
        branch, checkpoint_stage = created.branch, cand_key(g, k, "train")
        if merged:
            done = ctx.log.done(cand_key(g, k, "final"), VerdictRecorded)
            if done is None:
                best = max((m.delta for _, m in merged if m.delta is not None), default=None)
                together, made = combine(ctx, view, k, hypotheses[k], v, created, ctx.repo.commit("main").hexsha, i,
                                         best)
                record = VerdictRecorded(**together.model_dump(), title=hypotheses[k].title,
                                         skills=hypotheses[k].skills_used, params=hypotheses[k].params)
                done = ctx.step(cand_key(g, k, "final"), VerdictRecorded,
                                functools.partial(_noted, ctx, created.commit, record))
                if made.how == "rebased" and made.branch:
                    branch = made.branch
            elif (rebased := ctx.log.done(cand_key(g, k, "made", tag=COMBINED), Combined)) and rebased.how == "rebased":
                branch = rebased.branch
            final[k] = done.verdict_only()
            if not final[k].promoted:
                continue
            checkpoint_stage = cand_key(g, k, "train", tag=COMBINED)
        merged_at = merge_key(g, k)
        ctx.step(merged_at, Merged, functools.partial(_merge_one, ctx, g, final[k], created, branch, merged_at))
        merged.append((k, final[k]))
        train = ctx.log.done(checkpoint_stage, StageDone)
        evidence = train_evidence(train.metrics) if train is not None else None
        if final[k].kind == "performance" and evidence is not None:
            next_policy = evidence.checkpoint
    return final, next_policy


def _noted(ctx: RunContext, commit: str, record: VerdictRecorded) -> VerdictRecorded:
    """The candidate's note follows its combined verdict before the verdict's journal line is written, as on
    every other path: a kill between the two used to leave the note on the first verdict for good."""
    add_note(ctx.repo, commit, note_for(record.verdict_only(), ctx.log))
    crashpoint("verdict/after-note", ctx.run_dir)
    return record


def _merge_one(ctx: RunContext, g: int, v: Verdict, created: CandidateCreated, branch: str, key: str) -> Merged:
    ctx.reporter.phase(f"gen {g}: merging {branch}")
    head = ctx.repo.commit(branch).hexsha
    if is_merged(ctx.repo, head):
        merge = ctx.repo.commit("main").hexsha  # merged before a kill, not yet journaled
        sync_checkout(ctx.repo, "main")  # the kill may have come before the checkout followed
    else:
        backtest = " ".join(f"{s.stage}={'pass' if s.passed else 'fail'}" for s in stages_of(ctx.log, v.cand_id))
        msg = format_message(f"Merge {branch}: {created.title}", "",
                             {"Backtest": backtest, "Verdict": f"promoted ({v.kind}): {v.reason}",
                              "Candidate": v.cand_id})
        merge = merge_no_ff(ctx.repo, branch, msg, when=ctx.when(key),
                            after_ref=lambda: crashpoint("merge/after-update-ref", ctx.run_dir))
    add_note(ctx.repo, merge, note_for(v, ctx.log))
    crashpoint("merge/after-note", ctx.run_dir)
    return Merged(cand_id=v.cand_id, merge_commit=merge, branch=branch)


def learn_from(ctx: RunContext, g: int, main_before: str, verdicts: list[Verdict],
               hypotheses: list[Hypothesis], conditions: str = "") -> None:
    """Evidence for every skill a candidate used (with the generation's `conditions`, evolve/conditions.py),
    then the proposer's skill writer on each outcome."""
    for k, (v, h) in enumerate(zip(verdicts, hypotheses, strict=True)):
        if h.skills_used:
            ctx.step(cand_key(g, k, "evidence"), SkillEvidence,
                     functools.partial(_evidence, ctx, g, k, main_before, v, h, conditions))
    for k, (v, h) in enumerate(zip(verdicts, hypotheses, strict=True)):
        ctx.step(cand_key(g, k, "learn"), SkillWritten, functools.partial(_learn, ctx, g, k, main_before, v, h))


def _evidence(ctx: RunContext, g: int, k: int, main_before: str, v: Verdict, h: Hypothesis,
              conditions: str) -> SkillEvidence:
    created = _candidate(ctx, g, k)
    retired = []
    used = [name for name in h.skills_used if not (created and name in created.not_applied)]
    for name in used:
        try:
            digest = skill_digest(ctx.skills.get(name))
        except UnknownSkill:
            continue  # a skill named by an LLM hypothesis that the library does not hold
        ev = Evidence(conditions=conditions, skill_digest=digest,run=ctx.run_id, harness_repo=str(ctx.repo.working_dir),
                      commit=(created.commit if created and created.commit else main_before),
                      domain=ctx.domain.name, metric="selection_delta" if v.kind == "performance" else "validity",
                      delta=v.delta, ci=v.ci, verdict=evidence_verdict(v), stage=v.stage,
                      date=time.strftime("%Y-%m-%d"), params=params_of(h.params, h.skills_used, name))
        try:
            if record_evidence(ctx.skills, name, ev, ctx.cfg.retire_after):
                retired.append(name)
        except UnknownSkill:
            continue  # a skill named by an LLM hypothesis that the library does not hold
    crashpoint("skills/after-evidence", ctx.run_dir)
    return SkillEvidence(skills=used, retired=retired)


def _learn(ctx: RunContext, g: int, k: int, main_before: str, v: Verdict, h: Hypothesis) -> SkillWritten:
    """The proposer's skill writer sees the hypothesis, the diff and the measured outcome. The skill it
    writes is published only after its trial; whatever fails or raises on the way (the writer, loading
    the skill, its trial, publishing it) refuses that skill with the reason, never the run."""
    created = _candidate(ctx, g, k)
    diff = ctx.repo.git.diff(main_before, created.commit) if created and created.commit else ""
    try:
        folder = ctx.proposer.learn(Outcome(
            run_id=ctx.run_id, generation=g, domain=ctx.domain.name, hypothesis=h, diff=diff,
            verdict=v, skills_dir=ctx.run_dir / "skills"))
    except (BudgetExhausted, KeyboardInterrupt):
        raise
    except Exception as e:  # the writer's failure is this candidate's lesson lost, not the run's
        return _refuse(ctx, None, f"the skill writer raised {failure_text(e)}")
    if folder is None:
        return SkillWritten(skill=None)
    if not _in_run_library(ctx, folder):
        return _refuse(ctx, folder, f"the skill writer returned {folder}, which is not a skill folder of this run's "
                                    f"library {ctx.run_dir / 'skills'}; a proposer's learn() must write there")
    cand_folder = ctx.run_dir / gen_dir(g) / cand_dir(k)
    try:
        refused = trial(load_skill(folder), domain_entry(ctx.cfg.domain).harness_domain, sandbox=ctx.sandbox,
                        limits=ctx.cfg.sandbox.limits(), kit_dir=ctx.kit_dir, work=cand_folder / "skill-trial",
                        edit=cand_folder / "edit")
        if not refused:
            skill = ctx.skills.add(folder, origin={"run": ctx.run_id, "candidate": v.cand_id,
                                                   "run_dir": str(ctx.run_dir)})
            return SkillWritten(skill=skill.name, path=str(skill.path))
    except SkillError as e:
        refused = str(e)
    except (BudgetExhausted, KeyboardInterrupt):
        raise
    except Exception as e:
        refused = f"trying or publishing it raised {failure_text(e)}"
    return _refuse(ctx, folder, refused)


def _in_run_library(ctx: RunContext, folder: Path) -> bool:
    """A skill folder of the run's own library (not a link, not a dot folder): the only place a learned
    skill is taken from, and the only folder a refusal moves."""
    library = (ctx.run_dir / "skills").resolve()
    return (folder.parent.resolve() == library and not folder.is_symlink() and folder.is_dir()
            and not folder.name.startswith((".", "_")))


def _refuse(ctx: RunContext, folder: Path | None, reason: str) -> SkillWritten:
    """Keep a refused skill for the user to read, in `RUN/skills/.refused` where no library loads it. A
    folder elsewhere is left alone; a link the writer put in the run library is removed (never its target)."""
    held = None
    if folder is not None and _in_run_library(ctx, folder):
        held = ctx.run_dir / "skills" / REFUSED_DIR / folder.name
        if held.exists():
            shutil.rmtree(held)
        held.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(held)
    elif folder is not None and folder.is_symlink() and folder.parent.resolve() == (ctx.run_dir / "skills").resolve():
        folder.unlink()
    ctx.reporter.phase(f"skill {folder.name if folder else '(none)'} not published: {reason}"[:300])
    return SkillWritten(skill=None, path=str(held or folder or ""), refused=reason)


def _candidate(ctx: RunContext, g: int, k: int) -> CandidateCreated | None:
    """Candidate k of generation g as it stands: after a repair turn, its commit is the repaired one."""
    created = ctx.log.done(cand_key(g, k, "created"), CandidateCreated)
    return with_repairs(ctx.log, created) if created else None


