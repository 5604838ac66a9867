"""Typed results of backtest stages and of the promotion decision."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Stage = Literal["implement", "static", "replay", "train", "gate"]
STAGE_ORDER: tuple[Stage, ...] = ("implement", "static", "replay", "train", "gate")


class StageResult(BaseModel):
    stage: Stage
    passed: bool
    reason: str
    seconds: float = 0.0
    metrics: dict[str, Any] = Field(default_factory=dict)


class Verdict(BaseModel):
    cand_id: str
    verdict: Literal["promoted", "rejected"]
    stage: Stage = Field(description="the stage that decided: the failing one, or gate")
    reason: str
    kind: Literal["validity", "performance"]
    delta: float | None = Field(None, description="paired selection-score improvement over control")
    ci: list[float] | None = None

    @property
    def promoted(self) -> bool:
        return self.verdict == "promoted"
