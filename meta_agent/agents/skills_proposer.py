"""The offline proposer: applies active skills whose triggers match the report's failure modes, then
searches the parameter ranges of the skills it tried (meta_agent/skills/variants.py).

While training does not move the policy (a measurability skill fires: the selection noise floor is near 0),
the triggered training settings (`training_setting` skills: learning rate, group size, clip range,
masking, curriculum) are proposed as one recipe, applied together in one candidate. Measured on SmolLM2
math (bench/results/policy-movement*), each of them alone changed 0 to 2 of 30 selection scores after
24 steps, so the gate sees a delta of 0 for each and would reject every piece; together, as the
reference harness, they gained 6 and lost none. Settings interact; one change at a time cannot find that.

Rule-based and deterministic for a seed; it says so in every hypothesis it writes.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from meta_agent.agents.base import Implementation, Outcome, ProposalContext, Workspace
from meta_agent.config import EvolveConfig
from meta_agent.hypothesis import Hypothesis, PredictedEffect
from meta_agent.report.rollout_report import RolloutReport
from meta_agent.skills.known import known_tried
from meta_agent.skills.model import KINDS, SkillMeta
from meta_agent.skills.retrieve import Ranked, rank, trigger_match
from meta_agent.skills.runner import ALREADY_APPLIED, run_apply
from meta_agent.skills.store import SkillSet
from meta_agent.skills.variants import Tried, next_variant, params_of, promise, tried_in


def _evidence(ranked: Ranked, report: RolloutReport) -> tuple[str, list[str], str]:
    """(evidence text with numbers, example rollout ids, the failure mode it is about)."""
    parts, rollouts, mode = [], [], ""
    for t in ranked.skill.meta.triggers:
        if t.label:
            stat = next((s for s in report.labels if s.label == t.label), None)
            if stat is None or stat.share < t.min_share:
                continue
            ids = [e.rollout_id for e in stat.exemplars]
            rollouts += ids
            parts.append(f"label {t.label} on {stat.count}/{report.rollouts} rollouts ({stat.share:.0%}), "
                         f"e.g. {', '.join(ids)}")
            mode = mode or t.label
        elif trigger_match(t, report) > 0:
            value = getattr(report, t.metric or "", None)
            parts.append(f"{t.metric} = {value:.3f} ({t.describe()})" if isinstance(value, float) else t.describe())
            mode = mode or (t.metric or "")
    return "; ".join(parts), rollouts, mode


def _shown(params: dict[str, Any], meta: SkillMeta) -> str:
    return ", ".join(f"{n}={params.get(n)}" for n in meta.param_ranges)


def _so_far(tried: list[Tried], meta: SkillMeta) -> str:
    said = [f"{_shown(t.params, meta)} {t.verdict}" + (f" (delta {t.delta:+.3f})" if t.delta is not None else "")
            for t in tried]
    return (f"A parameter variant; tried so far (in this run, or measured by an earlier run under the same "
            f"conditions): {'; '.join(said)}. ")


def skill_hypothesis(meta: SkillMeta, params: dict[str, Any], *, title: str, failure_mode: str, evidence: str,
                     rollouts: list[str] | None = None) -> Hypothesis:
    """A hypothesis that applies one skill with `params`: its intervention, kind, predicted effects and labels
    come from the skill."""
    return Hypothesis(
        title=title[:100],
        failure_mode=failure_mode,
        evidence=evidence,
        evidence_rollouts=rollouts or [],
        intervention=meta.description,
        kind=meta.gate_kind,
        predicted_effects=[PredictedEffect.model_validate(e) for e in meta.predicted_effects],
        skills_used=[meta.name],
        new_labels=list(meta.new_labels),
        params=params,
    )


def _hypothesis(r: Ranked, report: RolloutReport, params: dict[str, Any], follow_up: str) -> Hypothesis:
    m = r.skill.meta
    evidence, rollouts, mode = _evidence(r, report)
    return skill_hypothesis(
        m, params, title=f"Apply skill {m.name}" + (f" ({_shown(params, m)})" if m.param_ranges else ""),
        failure_mode=mode or next((t.label or t.metric or "" for t in m.triggers), ""),
        evidence=f"{follow_up}{evidence}. Chosen by the offline skills proposer (rule-based trigger match, "
                 f"score {r.score:.2f}).", rollouts=rollouts)


def _recipe(pool: list[Ranked]) -> list[Ranked]:
    """The untried triggered skills to apply together: every training-setting skill of `pool` when one of
    them is a measurability skill (training does not move the policy), and there are two or more."""
    members = [r for r in pool if r.skill.meta.training_setting and r.skill.meta.kind != "validity"]
    if len(members) < 2 or not any(r.skill.meta.kind == "measurability" for r in members):
        return []
    return members


def recipe_title(names: list[str], limit: int = 100) -> str:
    """"Apply skills a + b + c together", within the title's length limit: names that do not fit are
    counted ("and 2 more"), never cut mid-word (the commit title and the reports show it)."""
    for shown in range(len(names), 0, -1):
        rest = len(names) - shown
        title = "Apply skills " + " + ".join(names[:shown]) + (f" and {rest} more" if rest else "") + " together"
        if len(title) <= limit:
            return title
    return f"Apply {len(names)} skills together"


def _recipe_hypothesis(members: list[Ranked], report: RolloutReport) -> Hypothesis:
    names = [r.skill.name for r in members]
    found = [(r.skill.meta, *_evidence(r, report)) for r in members]
    effects: list[PredictedEffect] = []
    for meta in (r.skill.meta for r in members):
        for e in map(PredictedEffect.model_validate, meta.predicted_effects):
            if e not in effects:
                effects.append(e)
    noise = f"{report.selection_noise:.3f}" if report.selection_noise is not None else "unmeasured"
    return Hypothesis(
        title=recipe_title(names),
        failure_mode=next((mode for *_, mode in found if mode), "selection_noise"),
        evidence=(f"Selection noise floor {noise}: training this short does not move the selection score, so "
                  "each training setting alone can only score a delta of 0; the triggered ones are tried "
                  "together as one recipe. " + "; ".join(f"{m.name}: {ev}" for m, ev, _, _ in found)
                  + ". Chosen by the offline skills proposer (rule-based trigger match)."),
        evidence_rollouts=[rid for _, _, ids, _ in found for rid in ids],
        intervention=" ".join(f"{m.name}: {m.description}" for m, *_ in found),
        kind="performance",
        predicted_effects=effects,
        skills_used=names,
        new_labels=sorted({label for m, *_ in found for label in m.new_labels}),
        params={m.name: dict(m.params) for m, *_ in found},
    )


def _keep_a_slot_for_measurability(ordered: list[Ranked], k: int) -> list[Ranked]:
    """Validity fixes take at most k - 1 of a generation's slots while a measurability candidate (the
    recipe, or a measurability skill alone) is pending: until training moves the policy, every change the
    gate judges as performance, validity fixes without flagged rollouts included, scores a delta of 0, so a
    generation spent only on them is lost. Measured: the efficacy run's generation 0 tried two validity
    skills (both rejected); the recipe, tried one generation later, merged, and that generation is what
    the evolved policy lost against the reference harness (bench/results/efficacy-cpu-sel100-confirm)."""
    first = next((i for i, r in enumerate(ordered) if r.skill.meta.kind == "measurability"), None)
    if k < 2 or first is None or first < k:
        return ordered
    return [*ordered[:k - 1], ordered[first], *ordered[k - 1:first], *ordered[first + 1:]]


class SkillsProposer:
    """Matches report triggers to skills; implements a hypothesis by running the skill's apply.py."""

    name = "skills"

    def __init__(self, skills: SkillSet, seed: int = 0) -> None:
        self.skills = skills
        self.seed = seed

    @classmethod
    def from_config(cls, cfg: EvolveConfig, skills: SkillSet, run_dir: Path) -> SkillsProposer:
        return cls(skills=skills, seed=cfg.seed)

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        """Untried skills whose triggers fire, validity first, then measurability, then performance (the
        training settings as one recipe while a measurability skill fires); then, while slots remain, the
        next variant of skills this run already tried that have parameter ranges, most promising first."""
        ranked = rank(self.skills, ctx.report)
        tried = {r.skill.name: tried_in(ctx.history, r.skill.meta) + known_tried(ctx.known, r.skill.meta)
                 for r in ranked}
        pool = [r for r in ranked if r.trigger_score > 0 and not tried[r.skill.name]]
        # Seeded shuffle, then a stable sort: equal scores come out in a seed-determined order.
        # Validity first: fix what the reward measures before optimising against it. Then measurability:
        # while training does not move the policy, every performance change has a delta of exactly 0.
        random.Random(self.seed + ctx.generation).shuffle(pool)
        pool.sort(key=lambda r: (KINDS.index(r.skill.meta.kind), -r.score))
        recipe = _recipe(pool)
        in_recipe = {r.skill.name for r in recipe}
        ordered: list[Ranked] = [r for r in pool if r.skill.name not in in_recipe or r is recipe[0]]
        out: list[Hypothesis] = [  # the recipe takes the place of its first member
            _recipe_hypothesis(recipe, ctx.report) if recipe and r is recipe[0]
            else _hypothesis(r, ctx.report, dict(r.skill.meta.params), "")
            for r in _keep_a_slot_for_measurability(ordered, k)[:k]]
        follow_ups = sorted((r for r in ranked if tried[r.skill.name] and r.skill.meta.param_ranges),
                            key=lambda r: -promise(tried[r.skill.name]))
        for r in follow_ups:
            if len(out) >= k:
                break
            params = next_variant(r.skill.meta, tried[r.skill.name])
            if params is not None:
                out.append(_hypothesis(r, ctx.report, params, _so_far(tried[r.skill.name], r.skill.meta)))
        return out

    def learn(self, outcome: Outcome) -> Path | None:
        """Rule-based: the skills it applies already get their evidence from the loop; it writes no new ones."""
        return None

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        """Runs each skill's apply.py in turn. A recipe leaves out a member whose change the harness already
        has, or that cannot apply to this harness (its apply.py failed: a group size that does not divide a
        SWE step's 4 completions, a parameter it refuses); it names each with the reason, and they get no
        evidence. It fails only when no member applied: the settings that fit are still worth one test,
        and one that cannot fit must not sink them (it did in the SWE demo: group-size 8 on 1 x 4)."""
        names = hypothesis.skills_used
        if not names:
            return Implementation(ok=False, reason="the skills proposer implements only skill-based hypotheses")
        if len(names) == 1:
            outcome = run_apply(workspace.session, workspace.kit_dir, self.skills.get(names[0]), workspace.path,
                                hypothesis.params)
            return Implementation(ok=outcome.ok, summary=outcome.summary, reason=outcome.reason)
        done, had, failed = [], [], []
        for name in names:
            with tempfile.TemporaryDirectory(prefix="recipe-member-") as before:
                shutil.copytree(workspace.path, before, symlinks=True, dirs_exist_ok=True)
                outcome = run_apply(workspace.session, workspace.kit_dir, self.skills.get(name), workspace.path,
                                    params_of(hypothesis.params, names, name))
                if outcome.ok:
                    done.append(f"{name}: {outcome.summary}")
                    continue
                _restore(workspace.path, Path(before))  # what it wrote before it failed is not a change of it
            if outcome.reason.startswith(ALREADY_APPLIED):
                had.append(name)
            else:
                failed.append((name, _last_line(outcome.reason)))
        left_out = had + [name for name, _ in failed]
        if not done:
            if failed:
                return Implementation(ok=False, reason="no skill of the recipe applied: " + "; ".join(
                    f"skill {name} of the recipe: {why}" for name, why in failed), not_applied=left_out)
            return Implementation(ok=False, reason=f"{ALREADY_APPLIED}: the harness has every change of the recipe "
                                                   f"({', '.join(names)})", not_applied=left_out)
        return Implementation(ok=True, not_applied=left_out, summary="; ".join(done) + (
            f"; already in the harness: {', '.join(had)}" if had else "") + "".join(
            f"; not applied: {name} ({why})" for name, why in failed))


def _restore(path: Path, snapshot: Path) -> None:
    """Put `path`'s contents back as `snapshot` holds them (the folder itself stays: a sandbox mounts it),
    owned like `path` (a sandbox that runs as its own uid was handed the workspace and must still write it)."""
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shutil.copytree(snapshot, path, symlinks=True, dirs_exist_ok=True)
    owner = path.stat()
    if owner.st_uid != os.geteuid() or owner.st_gid != os.getegid():
        for dirpath, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                os.lchown(os.path.join(dirpath, name), owner.st_uid, owner.st_gid)


def _last_line(reason: str, limit: int = 300) -> str:
    """A failed apply.py's reason ends with its traceback; the last line says why."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "failed")[:limit]
