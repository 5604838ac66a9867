"""The promotion gate: every stage passed AND the evidence the hypothesis' kind needs.

- validity (a reward-hole fix or a new diagnostic): replay evidence suffices (reward taken only
  from verifier-rejected rollouts, or a new label's precision/recall against the verifier);
- performance (shaping, filters, curriculum, RL settings): the paired improvement on the sealed
  selection split has a bootstrap CI lower bound above 0 and a mean above the measured noise
  floor; training reward rising without the sealed score, or more rollouts flagged invalid by
  main's diagnostics than the control had, is never promoted.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from meta_agent.verdicts import StageResult, Verdict


class GateSettings(BaseModel):
    min_label_precision: float = Field(0.8, ge=0, le=1, description="a new diagnostic's precision vs the verifier")
    invalid_margin: float = Field(0.05, ge=0, description="tolerated rise in the share of rollouts flagged invalid")


def decide(
    cand_id: str,
    kind: Literal["validity", "performance"],
    stages: list[StageResult],
    noise_floor: float,
    settings: GateSettings,
) -> Verdict:
    failed = next((s for s in stages if not s.passed), None)
    if failed is not None:
        return Verdict(cand_id=cand_id, verdict="rejected", stage=failed.stage, reason=failed.reason, kind=kind)
    by_stage = {s.stage: s for s in stages}
    if kind == "validity":
        replay = by_stage["replay"].metrics
        ok = bool(replay.get("validity_evidence"))
        return Verdict(cand_id=cand_id, verdict="promoted" if ok else "rejected", stage="gate", kind=kind,
                       reason=f"validity change: {replay.get('validity_reason')}")
    train = by_stage["train"].metrics
    delta, (low, high) = float(train["delta"]), train["ci"]
    verdict = Verdict(cand_id=cand_id, verdict="rejected", stage="gate", kind=kind, delta=delta, ci=[low, high],
                      reason="")
    if train["invalid_share"] > train["control_invalid_share"] + settings.invalid_margin:
        verdict.reason = (f"rollouts flagged invalid by main's diagnostics: {train['invalid_share']:.0%} vs "
                          f"control {train['control_invalid_share']:.0%}")
    elif train["train_reward"] > train["control_train_reward"] and delta <= 0:
        verdict.reason = (f"training reward rose ({train['control_train_reward']:.3f} -> {train['train_reward']:.3f}) "
                          f"but the sealed selection score did not (delta {delta:+.3f})")
    elif low <= 0:
        verdict.reason = f"paired CI lower bound {low:+.3f} is not above 0 (delta {delta:+.3f})"
    elif delta <= noise_floor:
        verdict.reason = f"delta {delta:+.3f} is within the noise floor {noise_floor:.3f}"
    else:
        verdict.verdict = "promoted"
        verdict.reason = f"paired delta {delta:+.3f} [{low:+.3f}, {high:+.3f}] > 0 and > noise floor {noise_floor:.3f}"
    return verdict
