"""The promotion gate: every stage passed AND the evidence the *measured* kind of change needs.

Nothing reaches main untrained: every candidate that passes its replay trains (short, from the
generation's policy, with the control's seed), so what a harness does when it trains is judged
beside what it does when it replays.

- every kind: no rise in the share of rollouts flagged invalid by the *trusted* diagnostics
  (main's as of the generation's start, plus labels promoted earlier), and no rise in training
  reward while the sealed selection score does not rise;
- validity (a reward hole closed): the replay is the evidence that it takes reward only from
  verifier-rejected rollouts, and its own training must not pay a larger share of verifier-rejected
  rollouts than the control's did;
- diagnostic (labels only): each new label's lift over the base rate beyond chance
  (`backtest/labels.py`), and the training guards above;
- performance (shaping, filters, curriculum, prompts, RL settings): the paired improvement on the
  sealed selection split has a CI lower bound above 0 at the run's level (Bonferroni over every
  paired test the run may take: generations x tests per generation) and a mean above the measured
  noise floor.

A change the replay measures as validity or diagnostic whose diff also reaches training settings
or code (`backtest/surfaces.py`) is judged as a performance change. The kind the proposer declared
is recorded beside the measured one; it decides nothing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from meta_agent.backtest.replay import ReplayEvidence, replay_evidence
from meta_agent.backtest.static import StaticEvidence, static_evidence
from meta_agent.verdicts import Kind, StageResult, TrainEvidence, Verdict


class GateSettings(BaseModel):
    family_alpha: float = Field(0.05, gt=0, lt=1, description="error rate of promoting any null candidate in the "
                                                              "whole run (Bonferroni over its generations x tests)")
    invalid_margin: float = Field(0.05, ge=0, description="tolerated rise in the share of rollouts flagged invalid, "
                                                          "and in the share of verifier-rejected rollouts paid")
    label_alpha: float = Field(0.05, gt=0, lt=1, description="Fisher test level for a new diagnostic label")
    label_min_lift: float = Field(0.1, ge=0, le=1, description="a new label's precision minus the base rate")


def ci_level(settings: GateSettings, tests_per_generation: int, generations: int = 1) -> float:
    """Two-sided CI level of one paired test, so that the chance of promoting any null change in the whole
    run stays at `family_alpha`: the budget is spent evenly over every test the run may take."""
    return 1 - settings.family_alpha / (max(1, tests_per_generation) * max(1, generations))


def _measured(replay: ReplayEvidence | None, static: StaticEvidence | None) -> tuple[Kind, str]:
    """(the kind the evidence says, and why it is not the replay's own measure when the diff says more)."""
    if replay is None:
        return "performance", ""
    kind = replay.measured_kind
    if kind != "performance" and static is not None and static.surfaces.training:
        return "performance", (f"; the replay measured a {kind} change, but its diff also changes what only training "
                               f"shows ({static.surfaces.describe_training()}), so it is judged as a performance "
                               "change")
    return kind, ""


def decide(cand_id: str, declared: Literal["validity", "performance"], stages: list[StageResult],
           noise_floor: float, settings: GateSettings) -> Verdict:
    by_stage = {s.stage: s for s in stages}
    replay = replay_evidence(by_stage.get("replay"))
    measured, why = _measured(replay, static_evidence(by_stage.get("static")))
    base = Verdict(cand_id=cand_id, verdict="rejected", stage="gate", reason="", kind=measured,
                   declared_kind=declared)
    failed = next((s for s in stages if not s.passed), None)
    if failed is not None:
        return base.model_copy(update={"stage": failed.stage, "reason": failed.reason})
    note = ("" if measured == declared else f" (declared {declared}, measured {measured})") + why
    if "train" not in by_stage:
        return base.model_copy(update={"reason": f"{measured} change{note} that was not trained: nothing reaches "
                                                 "main untrained"})
    train = TrainEvidence.model_validate(by_stage["train"].metrics)
    base = base.model_copy(update={"delta": train.delta, "ci": list(train.ci)})
    guard = _training_guard(train, settings)
    if guard is not None:
        return base.model_copy(update={"reason": f"{measured} change{note}: {guard}"})
    if measured == "validity" and replay is not None:
        return base.model_copy(update={"verdict": "promoted", "reason": (
            f"validity change{note}: {replay.kind_reason}; in its own training it paid "
            f"{train.paid_rejected_share:.0%} of rollouts the verifier rejects "
            f"(control {train.control_paid_rejected_share:.0%})")})
    if measured == "diagnostic":
        labels = replay.new_labels if replay is not None else []
        weak = [lab.reason for lab in labels if not lab.passed]
        if labels and not weak:
            return base.model_copy(update={"verdict": "promoted", "reason": f"diagnostic{note}: "
                                           + "; ".join(lab.reason for lab in labels)})
        return base.model_copy(update={"reason": f"diagnostic{note} without evidence: " + "; ".join(weak)})
    return _performance(base, train, noise_floor, note)


def _training_guard(train: TrainEvidence, settings: GateSettings) -> str | None:
    """What every kind of change must not do in its own training, whatever its replay showed."""
    invalid, control_invalid = train.invalid_share, train.control_invalid_share
    paid, control_paid = train.paid_rejected_share, train.control_paid_rejected_share
    reward, control_reward, delta = train.train_reward, train.control_train_reward, train.delta
    if invalid > control_invalid + settings.invalid_margin:
        return (f"rollouts flagged invalid by the trusted diagnostics: {invalid:.0%} vs control "
                f"{control_invalid:.0%}")
    if paid > control_paid + settings.invalid_margin:
        return (f"in its own training its reward paid {paid:.0%} of the rollouts, all rejected by the sealed "
                f"verifier, vs {control_paid:.0%} under the control's: a reward that pays what the verifier rejects "
                "once it trains")
    if reward is not None and control_reward is not None and reward > control_reward and delta <= 0:
        return (f"training reward rose ({control_reward:.3f} -> {reward:.3f}) but the sealed selection score did "
                f"not (delta {delta:+.3f})")
    return None


def _performance(verdict: Verdict, train: TrainEvidence, noise_floor: float, note: str) -> Verdict:
    assert verdict.delta is not None and verdict.ci is not None
    delta, (low, high) = verdict.delta, verdict.ci
    level = train.ci_level
    if low <= 0:
        reason = f"paired {level:.1%} CI lower bound {low:+.3f} is not above 0 (delta {delta:+.3f})"
    elif delta <= noise_floor:
        reason = f"delta {delta:+.3f} is within the noise floor {noise_floor:.3f}"
    else:
        return verdict.model_copy(update={"verdict": "promoted", "reason": (
            f"performance change{note}: paired delta {delta:+.3f}, {level:.1%} CI [{low:+.3f}, {high:+.3f}] > 0 "
            f"(the run's false-merge budget spread over its tests) and > noise floor {noise_floor:.3f}")})
    return verdict.model_copy(update={"reason": f"performance change{note}: {reason}"})
