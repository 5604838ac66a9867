"""The agent's knobs, from harness.yaml `domain_settings` (validated, with defaults)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from harness.config import HarnessConfig


class AgentSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_turns: int = Field(3, ge=1)
    turn_tokens: int = Field(48, ge=1)
    observation_chars: int = Field(600, ge=50)
    command_timeout_s: float = Field(10, gt=0)
    test_timeout_s: float = Field(60, gt=0)
    turn_cache: bool = Field(
        True, description="keep each episode's KV cache from one turn to the next (harness/swe/turn_cache.py): "
        "a turn encodes only the last reply's final token and the new observation; false re-encodes the "
        "whole conversation every turn. Sampled tokens differ only by float rounding")


def agent_settings(cfg: HarnessConfig) -> AgentSettings:
    return AgentSettings.model_validate(cfg.domain_settings)
