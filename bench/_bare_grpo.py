"""Bare TRL GRPO baseline for bench/grpo_overhead.py: the same model, prompts and settings, no harness.

Usage: python bench/_bare_grpo.py SPEC_JSON  -> prints one JSON line with per-step times and tokens.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer


class StepTimer(TrainerCallback):
    def __init__(self) -> None:
        self.times: list[float] = []
        self.last = time.monotonic()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        now = time.monotonic()
        self.times.append(now - self.last)
        self.last = now


def main() -> None:
    spec = json.loads(sys.argv[1])
    tok = AutoTokenizer.from_pretrained(spec["model"])
    model = AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32)
    tokens: list[int] = []

    def reward(prompts: list[Any], completions: list[Any], completion_ids: list[list[int]], **kw: Any) -> list[float]:
        tokens.append(sum(len(c) for c in completion_ids))
        return [0.0 for _ in completions]  # the work per step does not depend on the reward

    stock = spec["stock"]
    args = GRPOConfig(
        output_dir=spec["scratch"], max_steps=spec["steps"],
        per_device_train_batch_size=spec["generations"] * spec.get("prompts_per_step", 1),
        num_generations=spec["generations"], max_completion_length=spec["max_tokens"], learning_rate=2e-5,
        use_cpu=True, logging_steps=1, save_strategy="no", report_to=[], disable_tqdm=True, seed=0,
        shuffle_dataset=False, beta=0.0,
        # stock = TRL's defaults (bf16 + gradient checkpointing); otherwise the settings the harness chose
        **({} if stock else {"bf16": spec["precision"] == "bf16", "fp16": False, "gradient_checkpointing": False}),
    )
    data = Dataset.from_list([{"prompt": c} for c in spec["conversations"]])
    timer = StepTimer()
    trainer = GRPOTrainer(
        model=model, reward_funcs=reward, args=args, train_dataset=data, processing_class=tok,
        peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"),
        callbacks=[timer],
    )
    timer.last = time.monotonic()
    trainer.train()
    print(json.dumps({"step_times": timer.times, "completion_tokens": tokens}))


if __name__ == "__main__":
    main()
