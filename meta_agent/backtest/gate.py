"""The promotion gate: every stage passed AND the evidence the *measured* kind of change needs.

- validity (a reward hole closed) and diagnostic (labels only): the replay is the evidence —
  reward taken only from verifier-rejected rollouts, or each new label's lift over the base rate
  beyond chance (`backtest/labels.py`);
- performance (shaping, filters, curriculum, prompts, RL settings): the paired improvement on the
  sealed selection split has a CI lower bound above 0 at the family-wise level (Bonferroni over
  the generation's K candidates) and a mean above the measured noise floor; a rise in training
  reward without the sealed score, or more rollouts flagged invalid by the *trusted* diagnostics
  (main's as of the generation's start, plus labels promoted earlier) than the control had, is
  never promoted.

The kind the proposer declared is recorded beside the measured one; it decides nothing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from meta_agent.verdicts import Kind, StageResult, Verdict


class GateSettings(BaseModel):
    family_alpha: float = Field(0.05, gt=0, lt=1, description="error rate of promoting any null candidate of a "
                                                              "generation (Bonferroni over its K candidates)")
    invalid_margin: float = Field(0.05, ge=0, description="tolerated rise in the share of rollouts flagged invalid")
    label_alpha: float = Field(0.05, gt=0, lt=1, description="Fisher test level for a new diagnostic label")
    label_min_lift: float = Field(0.1, ge=0, le=1, description="a new label's precision minus the base rate")


def ci_level(settings: GateSettings, candidates: int) -> float:
    """Two-sided CI level per candidate so that the generation's family-wise error stays at family_alpha."""
    return 1 - settings.family_alpha / max(1, candidates)


def _measured(stages: list[StageResult]) -> Kind | None:
    replay = next((s for s in stages if s.stage == "replay"), None)
    kind = replay.metrics.get("measured_kind") if replay else None
    return kind if kind in ("validity", "diagnostic", "performance") else None


def decide(cand_id: str, declared: Literal["validity", "performance"], stages: list[StageResult],
           noise_floor: float, settings: GateSettings) -> Verdict:
    measured = _measured(stages) or "performance"
    base = Verdict(cand_id=cand_id, verdict="rejected", stage="gate", reason="", kind=measured,
                   declared_kind=declared)
    failed = next((s for s in stages if not s.passed), None)
    if failed is not None:
        return base.model_copy(update={"stage": failed.stage, "reason": failed.reason})
    note = "" if measured == declared else f" (declared {declared}, measured {measured})"
    by_stage = {s.stage: s for s in stages}
    if measured in ("validity", "diagnostic"):
        replay = by_stage["replay"].metrics
        if measured == "validity":
            return base.model_copy(update={"verdict": "promoted", "reason": f"validity change{note}: "
                                           f"{replay['kind_reason']}"})
        labels = replay.get("new_labels") or []
        weak = [lab["reason"] for lab in labels if not lab["passed"]]
        if labels and not weak:
            return base.model_copy(update={"verdict": "promoted", "reason": f"diagnostic{note}: "
                                           + "; ".join(lab["reason"] for lab in labels)})
        return base.model_copy(update={"reason": f"diagnostic{note} without evidence: " + "; ".join(weak)})
    if "train" not in by_stage:
        return base.model_copy(update={"reason": f"performance change{note} that was not trained: "
                                                 "nothing shows it helps"})
    return _performance(base, by_stage["train"].metrics, noise_floor, settings, note)


def _performance(base: Verdict, train: dict[str, object], noise_floor: float, settings: GateSettings,
                 note: str) -> Verdict:
    delta = float(train["delta"])  # type: ignore[arg-type]
    low, high = (float(x) for x in train["ci"])  # type: ignore[attr-defined]
    level = float(train.get("ci_level", 0.95))  # type: ignore[arg-type]
    verdict = base.model_copy(update={"delta": delta, "ci": [low, high]})
    invalid, control_invalid = float(train["invalid_share"]), float(train["control_invalid_share"])  # type: ignore[arg-type]
    reward, control_reward = float(train["train_reward"]), float(train["control_train_reward"])  # type: ignore[arg-type]
    if invalid > control_invalid + settings.invalid_margin:
        reason = (f"rollouts flagged invalid by the trusted diagnostics: {invalid:.0%} vs control "
                  f"{control_invalid:.0%}")
    elif reward > control_reward and delta <= 0:
        reason = (f"training reward rose ({control_reward:.3f} -> {reward:.3f}) but the sealed selection score did "
                  f"not (delta {delta:+.3f})")
    elif low <= 0:
        reason = f"paired {level:.1%} CI lower bound {low:+.3f} is not above 0 (delta {delta:+.3f})"
    elif delta <= noise_floor:
        reason = f"delta {delta:+.3f} is within the noise floor {noise_floor:.3f}"
    else:
        return verdict.model_copy(update={"verdict": "promoted", "reason": (
            f"performance change{note}: paired delta {delta:+.3f}, {level:.1%} CI [{low:+.3f}, {high:+.3f}] > 0 "
            f"and > noise floor {noise_floor:.3f}")})
    return verdict.model_copy(update={"reason": f"performance change{note}: {reason}"})
