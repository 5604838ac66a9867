"""Bare TRL `GRPOTrainer` seconds per step at the math template's settings, with its own HF `generate`
(bench/gpu_path.py's GRPO rows): warm-up steps dropped, the median of the timed steps, the generation
share, tokens/s and the model FLOP rate against the measured matmul ceilings."""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from bench.gpu_lib.common import SectionResults, counting_reward, log, peak_memory_gib, step_timer, sync

# harness_repo/configs/math.yaml
TEMPLATE: dict[str, Any] = {
    "num_generations": 4, "prompts_per_step": 2, "max_completion_length": 48, "learning_rate": 2e-5,
    "temperature": 1.0, "top_p": 1.0, "beta": 0.0, "epsilon": 0.2, "epsilon_high": 0.2,
    "loss_type": "dapo", "scale_rewards": "group", "mask_truncated_completions": False,
    "gradient_checkpointing": False, "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.0,
}


def grpo_run(res: SectionResults, name: str, model_dir: Path, tok: Any, prompts: dict[str, Any], *, device: str,
             precision: str, generations: int, prompts_per_step: int, max_tokens: int, warmup: int, timed: int,
             params: int) -> None:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    steps = warmup + timed
    t = TEMPLATE
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    rng = random.Random(0)
    per_step: list[dict[str, int]] = []

    # random 0/1: non-zero advantages
    reward = counting_reward(tok, per_step, lambda n: [float(rng.random() < 0.5) for _ in range(n)])
    with tempfile.TemporaryDirectory() as scratch:
        args = GRPOConfig(
            output_dir=scratch, max_steps=steps, per_device_train_batch_size=generations * prompts_per_step,
            num_generations=generations, gradient_accumulation_steps=1, max_completion_length=max_tokens,
            learning_rate=t["learning_rate"], temperature=t["temperature"], top_p=t["top_p"], beta=t["beta"],
            epsilon=t["epsilon"], epsilon_high=t["epsilon_high"], loss_type=t["loss_type"],
            scale_rewards=t["scale_rewards"], mask_truncated_completions=t["mask_truncated_completions"],
            bf16=precision == "bf16", fp16=False, gradient_checkpointing=t["gradient_checkpointing"],
            use_cpu=device != "cuda", shuffle_dataset=False, logging_steps=1, save_strategy="no", report_to=[],
            seed=0, disable_tqdm=True, remove_unused_columns=False,
            generation_kwargs={"min_new_tokens": max_tokens},  # fixed lengths: timing must not depend on EOS
        )
        rows = [{"prompt": prompts["train"][i % len(prompts["train"])]} for i in range(steps * prompts_per_step)]
        timer = step_timer(device)
        trainer = GRPOTrainer(
            model=model, reward_funcs=reward, args=args, train_dataset=Dataset.from_list(rows),
            processing_class=tok, callbacks=[timer],
            peft_config=LoraConfig(r=t["lora_r"], lora_alpha=t["lora_alpha"], lora_dropout=t["lora_dropout"],
                                   target_modules="all-linear", task_type="CAUSAL_LM"),
        )
        gen_times: list[float] = []
        inner = getattr(trainer, "_generate_single_turn", None)
        if inner is not None:
            def timed_generate(*a: Any, **kw: Any) -> Any:
                sync(device)
                s = time.perf_counter()
                out = inner(*a, **kw)
                sync(device)
                gen_times.append(time.perf_counter() - s)
                return out

            trainer._generate_single_turn = timed_generate  # type: ignore[method-assign]
        mixed = str(getattr(trainer.accelerator, "mixed_precision", "?"))
        timer.last = time.perf_counter()
        trainer.train()
    peak_mem = peak_memory_gib(device)
    step_s = statistics.median(timer.times[warmup:])
    gen_s = statistics.median(gen_times[warmup:]) if len(gen_times) >= steps else None
    tl = per_step[warmup:steps] or per_step
    comp = statistics.mean(x["completion"] for x in tl)
    total = statistics.mean(x["completion"] + x["prompt"] for x in tl)
    peak = res.data["matmul"].get("bf16_tflops")
    peak32 = res.data["matmul"].get("fp32_tflops")
    flops = 6 * params * total / step_s / 1e12
    row = {"name": name, "generation": "HF generate (TRL)", "precision": precision, "accelerate_mixed": mixed,
           "completions": generations * prompts_per_step, "num_generations": generations,
           "prompts_per_step": prompts_per_step, "max_completion_length": max_tokens, "warmup_steps": warmup,
           "timed_steps": timed, "step_times_s": [round(x, 4) for x in timer.times],
           "generate_times_s": [round(x, 4) for x in gen_times], "step_s": step_s, "generate_s": gen_s,
           "completion_tokens_per_step": comp, "tokens_per_step": total, "tokens_per_s": total / step_s,
           "completion_tokens_per_s": comp / step_s, "model_tflops": flops,
           "pct_of_bf16_matmul": 100 * flops / peak if peak else None,
           "pct_of_fp32_matmul": 100 * flops / peak32 if peak32 else None, "peak_memory_gib": peak_mem}
    res.data["grpo"].append(row)
    log(f"GRPO {name}: {step_s:.3f} s/step (generation {gen_s}), {total:.0f} tokens/step, "
        f"{total / step_s:.0f} tokens/s, {flops:.3g} TFLOP/s")
    res.save()
    del trainer, model
    if device == "cuda":
        torch.cuda.empty_cache()

