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
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from harness.config import HarnessConfig
from harness.io import SCHEMA_VERSION, write_json

MANIFEST = "manifest.json"


def read_manifest(path: Path) -> dict[str, Any] | None:
    f = path / MANIFEST
    return json.loads(f.read_text()) if f.is_file() else None


def training_dtype(precision: str) -> torch.dtype:
    """Precision from the hardware, not from a library default: CPUs here have no fast bf16 matmul."""
    if precision == "auto":
        cuda_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if cuda_bf16 else torch.float32
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def _load_model(path: Path, dtype: torch.dtype) -> PreTrainedModel:
    if not (path / "config.json").is_file():
        raise SystemExit(f"policy {path} is not a transformers model directory (no config.json)")
    model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(
        str(path), dtype=dtype, use_safetensors=True, trust_remote_code=False
    )
    return model


def load_policy(
    path: Path, cfg: HarnessConfig
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, Path, LoraConfig | None]:
    """(model, tokenizer, base model dir, LoRA config for a fresh adapter or None)."""
    dtype = training_dtype(cfg.rl.precision)
    manifest = read_manifest(path)
    if manifest and manifest["format"] == "lora":
        base = Path(manifest["base_model"])
        model = PeftModel.from_pretrained(_load_model(base, dtype), str(path), is_trainable=True)
        peft_config = None
    else:
        base = path
        model = _load_model(path, dtype)
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


def save_checkpoint(
    model: Any, tokenizer: PreTrainedTokenizerBase, out: Path, *, base: Path, steps: int, seed: int,
    parent: Path, commit: str,
) -> Path:
    """Save weights (adapter only for LoRA) and the manifest meta-agent validates."""
    ckpt = out / "checkpoint"
    ckpt.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(ckpt), safe_serialization=True)
    tokenizer.save_pretrained(str(ckpt))
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
