"""Typed results of backtest stages and of the promotion decision."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Stage = Literal["implement", "static", "replay", "train", "confirm", "gate", "merge"]
STAGE_ORDER: tuple[Stage, ...] = ("implement", "static", "replay", "train", "confirm", "gate")
Kind = Literal["validity", "diagnostic", "performance"]
"""validity: closes a reward hole; diagnostic: adds failure labels only; performance: anything else."""


class StageResult(BaseModel):
    stage: Stage
    passed: bool
    reason: str
    seconds: float = 0.0
    metrics: dict[str, Any] = Field(default_factory=dict)


class TrainEvidence(BaseModel):
    """What a training backtest (or a confirmation rung) measured: the train stage writes it as its metrics,
    and the gate, the confirmation rung and the choice of the next policy read it through this model, so a
    key renamed on one side fails on the other instead of passing unread."""

    model_config = ConfigDict(extra="forbid")
    selection_score: float
    control_score: float
    delta: float = Field(description="paired selection-score improvement over the control")
    ci: list[float] = Field(min_length=2, max_length=2, description="[low, high] of the paired CI of delta")
    ci_level: float = Field(0.95, gt=0, lt=1)
    train_reward: float | None = Field(description="mean training reward of the candidate's own training")
    control_train_reward: float | None
    guard_labels: list[str] = Field(default_factory=list, description="the trusted labels counted as invalid")
    invalid_share: float
    control_invalid_share: float
    paid_rejected_share: float = Field(0.0, description="share of rollouts the reward paid and the verifier rejected")
    control_paid_rejected_share: float = 0.0
    compute: dict[str, Any] | None = None
    control_compute: dict[str, Any] | None = None
    budget_tokens: int | None = None
    checkpoint: str = Field(description="the trained policy: the next generation's, if this candidate merges")
    tasks: int = Field(ge=0, description="selection tasks in the paired comparison")
    train_seconds: float = 0.0
    eval_seconds: float = 0.0
    steps: int | None = Field(None, description="a confirmation rung's total steps (its short rung's included)")


def train_evidence(metrics: dict[str, Any]) -> TrainEvidence | None:
    """A train stage's evidence, or None for one that stopped before measuring (a failed training, or one
    refused for its compute, whose metrics hold only the counts)."""
    return TrainEvidence.model_validate(metrics) if "checkpoint" in metrics else None


class Verdict(BaseModel):
    cand_id: str
    verdict: Literal["promoted", "rejected", "conflict"] = Field(
        description="conflict: promoted alone, but it could not be combined with this generation's earlier winners")
    stage: Stage = Field(description="the stage that decided: the failing one, gate, or merge")
    reason: str
    kind: Kind = Field(description="what the replay measured the change to be (this decides how it is judged)")
    declared_kind: Literal["validity", "performance"] | None = Field(None, description="what its proposer said")
    delta: float | None = Field(None, description="paired selection-score improvement over control")
    ci: list[float] | None = None

    @property
    def promoted(self) -> bool:
        return self.verdict == "promoted"
