"""Typed results of backtest stages and of the promotion decision."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

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
