"""harness.yaml: the RL settings of this harness, validated with clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


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
    generation: Literal["merged", "transformers", "vllm"] = Field(
        "merged", description="merged: TRL's generate on a LoRA-merged copy in the training dtype "
        "(harness/merged_policy.py); transformers: TRL's generate on the trained model itself; vllm: TRL's "
        "use_vllm, colocate mode (a CUDA GPU and vLLM installed)")
    shared_prefix: bool = Field(
        True, description="the learner encodes each group's prompt once and scores its completions against that "
        "cache (harness/shared_prefix.py): the same log-probs and gradients up to float rounding, fewer tokens "
        "through forward and backward; false: TRL's own forward, every row whole")
    skip_zero_advantage: bool = Field(
        True, description="the learner runs the completions whose advantage is 0 (a group with no reward spread) "
        "or that a filter weighted 0 without autograd: they add exactly 0 to every gradient, and backward skips "
        "them (harness/zero_advantage.py; the same loss, gradients and logged metrics); false: autograd through "
        "every row, as in TRL")
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=0.95, description="GPU memory vLLM may take")
    micro_batch_size: int | None = Field(
        None, ge=1, le=4096, description="at most this many completions per forward and backward pass: a step's "
        "num_generations x prompts_per_step completions are accumulated over equal passes (the largest divisor of "
        "the step's batch not above this), one optimizer step as before; less memory, the same update up to float "
        "rounding. None: the whole step in one pass")

    def micro_batch(self) -> tuple[int, int]:
        """(completions per pass, passes per optimizer step)."""
        return split_batch(self.num_generations * self.prompts_per_step, self.micro_batch_size)


def split_batch(batch: int, cap: int | None) -> tuple[int, int]:
    """(items per pass, passes): the largest divisor of `batch` not above `cap` (None: one pass)."""
    most = min(cap or batch, batch)
    size = max(d for d in range(1, most + 1) if batch % d == 0)
    return size, batch // size


class CurriculumSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    strategy: Literal["shuffle", "easy_first", "pass_rate"] = "shuffle"
    pass_rates: str | None = Field(None, description="JSON file task_id -> pass rate, for strategy pass_rate")


class WarmStartSettings(BaseModel):
    """Supervised steps on demonstrations before GRPO (harness/warm_start.py); steps 0 = none."""

    model_config = ConfigDict(extra="forbid")
    steps: int = Field(0, ge=0, le=10_000, description="optimizer steps of supervised fine-tuning; 0 = off")
    passes: float | None = Field(None, gt=0, le=1000, description="at most this many passes over the examples: "
                                 "`steps` is cut to fit where fewer demonstrations were made than it assumes "
                                 "(None: `steps` alone decides)")
    learning_rate: float = Field(1e-4, gt=0, lt=1)
    batch_size: int = Field(4, ge=1, le=256, description="examples per step: a demonstration each, its "
                            "assistant turns in the loss (harness/warm_start.py); rl.micro_batch_size caps how "
                            "many go through one pass, as in GRPO")
    max_demos: int = Field(64, ge=1, le=100_000, description="demonstrations acted out, easiest tasks first")
    max_length: int = Field(1536, ge=64, le=32_768, description="tokens per example: a longer demonstration "
                            "trains one example per turn, a longer turn example is cut")


class HarnessConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    domain: Literal["math", "code", "swe"]
    policy: PolicySettings = PolicySettings()
    rl: RLSettings = RLSettings()
    rewards: dict[str, float] = Field(default_factory=lambda: {"correctness": 1.0})
    filters: list[str] = Field(default_factory=list)
    curriculum: CurriculumSettings = CurriculumSettings()
    warm_start: WarmStartSettings = WarmStartSettings()
    domain_settings: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _generation_fits_domain(self) -> HarnessConfig:
        if self.rl.generation == "vllm" and self.domain == "swe":
            raise ValueError("rl.generation vllm: the swe harness generates in its own multi-turn rollout loop "
                             "(harness/swe/rollout_func.py), so vLLM generation applies to math and code only")
        return self


def generation_problem(cfg: HarnessConfig, cuda: bool, vllm_installed: bool) -> str | None:
    """Why this machine cannot train with `rl.generation` (None: it can)."""
    if cfg.rl.generation != "vllm":
        return None
    missing = [what for what, ok in (("a CUDA GPU", cuda), ("vLLM (pip install 'meta-agent[gpu]' with "
                                                             "constraints-gpu.txt)", vllm_installed)) if not ok]
    if not missing:
        return None
    return (f"harness.yaml rl.generation is vllm, which needs {' and '.join(missing)}; set rl.generation: "
            f"transformers on this machine")


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
