"""Loading the policy to train and saving what training produced.

`--policy` is either a plain transformers model directory or a checkpoint this
harness wrote earlier (a directory with manifest.json; LoRA adapters point at
their base model). Only safetensors are loaded and remote code is never trusted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from harness.config import HarnessConfig
from harness.io import SCHEMA_VERSION, write_json

MANIFEST = "manifest.json"
OPTIMIZER_STATE = "optimizer_state.safetensors"


def read_manifest(path: Path) -> dict[str, Any] | None:
    f = path / MANIFEST
    return json.loads(f.read_text()) if f.is_file() else None


def _cpu_bf16_is_fast() -> bool:
    """Whether this CPU multiplies bf16 faster than fp32: only with AMX tiles (Sapphire Rapids and later,
    where a 2048-square bf16 matmul ran ~5x fp32's rate). AVX512-BF16 alone is not enough: on a 2-core
    Xeon VM with it and without AMX (2026-11-29), bf16 matmul ran at half fp32's rate (128 vs 251 GFLOP/s)
    and a SmolLM2 LoRA forward and backward under bf16 autocast took 1.2-1.5x its fp32 time. Asked of the
    hardware, not timed: a timed probe (4 matmuls of 512) once answered fp32 on a machine where it
    otherwise answered bf16, and one machine must not train in two precisions from run to run."""
    probe = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return bool(probe()) if probe is not None else False


def training_dtype(precision: str) -> torch.dtype:
    """Mixed-precision dtype from the hardware, never from a library default (TRL defaults to bf16)."""
    if precision == "auto":
        if torch.cuda.is_available():
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.bfloat16 if _cpu_bf16_is_fast() else torch.float32
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def _load_model(path: Path) -> PreTrainedModel:
    """fp32 master weights; bf16/fp16 run as autocast (TRL's mixed precision)."""
    if not (path / "config.json").is_file():
        raise SystemExit(f"policy {path} is not a transformers model directory (no config.json)")
    model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(
        str(path), dtype=torch.float32, use_safetensors=True, trust_remote_code=False
    )
    return model


def load_policy(
    path: Path, cfg: HarnessConfig
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, Path, LoraConfig | None]:
    """(model, tokenizer, base model dir, LoRA config for a fresh adapter or None)."""
    manifest = read_manifest(path)
    if manifest and manifest["format"] == "lora":
        base = Path(manifest["base_model"])
        model = PeftModel.from_pretrained(_load_model(base), str(path), is_trainable=True)
        peft_config = None
    else:
        base = path
        model = _load_model(path)
        p = cfg.policy
        peft_config = (
            LoraConfig(
                r=p.lora_r,
                lora_alpha=p.lora_alpha,
                lora_dropout=p.lora_dropout,
                target_modules=p.target_modules,
                task_type="CAUSAL_LM",
            )
            if p.lora
            else None
        )
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, base, peft_config


def save_optimizer_steps(optimizer: Any, ckpt: Path) -> None:
    """The optimizer's own step counters (one per trained tensor), which meta-agent reads to count the steps a
    run took: the run's compute comes from what ran, not from what the harness logged."""
    inner = getattr(optimizer, "optimizer", optimizer)  # accelerate wraps the torch optimizer
    steps = {f"{i}.step": torch.as_tensor(state["step"], dtype=torch.float64).reshape(1).to(torch.int64)
             for i, state in enumerate(inner.state.values()) if "step" in state}
    save_file(steps, str(ckpt / OPTIMIZER_STATE))


def save_checkpoint(
    model: Any, tokenizer: PreTrainedTokenizerBase, out: Path, *, base: Path, steps: int, seed: int,
    parent: Path, commit: str, optimizer: Any = None,
) -> Path:
    """Save weights (adapter only for LoRA), the optimizer's step counters and the manifest meta-agent validates."""
    ckpt = out / "checkpoint"
    ckpt.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(ckpt), safe_serialization=True)
    tokenizer.save_pretrained(str(ckpt))
    if optimizer is not None:
        save_optimizer_steps(optimizer, ckpt)
    is_lora = isinstance(model, PeftModel)
    write_json(
        ckpt / MANIFEST,
        {
            "schema_version": SCHEMA_VERSION,
            "format": "lora" if is_lora else "full",
            "base_model": str(base.resolve()) if is_lora else str(ckpt.resolve()),
            "parent": str(parent.resolve()),
            "steps": steps,
            "seed": seed,
            "harness_commit": commit,
        },
    )
    return ckpt
