"""harness.yaml: the RL settings of this harness, validated with clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class PolicySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lora: bool = True
    lora_r: int = Field(16, ge=1, le=512)
    lora_alpha: int = Field(32, ge=1)
    lora_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: str | list[str] = "all-linear"


class RLSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    learning_rate: float = Field(2e-5, gt=0, lt=1)
    num_generations: int = Field(4, ge=2, description="completions per prompt (GRPO group size)")
    prompts_per_step: int = Field(2, ge=1)
    max_completion_length: int = Field(48, ge=1)
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    beta: float = Field(0.0, ge=0)
    epsilon: float = Field(0.2, gt=0)
    epsilon_high: float = Field(0.2, gt=0)
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    mask_truncated_completions: bool = False
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    gradient_checkpointing: bool = False


class CurriculumSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    strategy: Literal["shuffle", "easy_first", "pass_rate"] = "shuffle"
    pass_rates: str | None = Field(None, description="JSON file task_id -> pass rate, for strategy pass_rate")


class HarnessConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    domain: Literal["math", "code", "swe"]
    policy: PolicySettings = PolicySettings()
    rl: RLSettings = RLSettings()
    rewards: dict[str, float] = Field(default_factory=lambda: {"correctness": 1.0})
    filters: list[str] = Field(default_factory=list)
    curriculum: CurriculumSettings = CurriculumSettings()
    domain_settings: dict[str, object] = Field(default_factory=dict)


class ConfigError(ValueError):
    """harness.yaml is missing or invalid; the message names the field and what is allowed."""


def _describe(err: ValidationError, path: Path) -> str:
    lines = [f"invalid {path}:"]
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"])
        allowed = e.get("ctx", {}).get("expected")
        hint = f" (allowed: {allowed})" if allowed else ""
        lines.append(f"  {field}: {e['msg']}{hint}; got {e.get('input')!r}")
    return "\n".join(lines)


def load_config(path: Path = Path("harness.yaml")) -> HarnessConfig:
    if not path.is_file():
        raise ConfigError(f"{path} not found: run from the harness repo root")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}") from e
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must be a mapping of settings, got {type(raw).__name__}")
    try:
        cfg = HarnessConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_describe(e, path)) from e
    return cfg
