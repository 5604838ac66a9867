"""`python -m harness train`: GRPO on the training tasks with this harness's settings."""

from __future__ import annotations

import importlib.util
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from datasets import Dataset
from trl import GRPOConfig

from harness.config import ConfigError, HarnessConfig, generation_problem, load_config
from harness.curriculum import order_tasks
from harness.domain import load_domain
from harness.io import JsonlAppender, harness_commit, read_tasks, write_json
from harness.policy import load_policy as load
from harness.policy import save_checkpoint, training_dtype
from harness.threads import FollowShare
from harness.trainer import HarnessGRPOTrainer, HarnessScorer, MetricsCallback
from harness.warm_start import warm_start


def tracking() -> dict[str, Any]:
    """TRL's `report_to`, as `meta-agent --tracker` asks through HARNESS_REPORT_TO (default: none).

    meta-agent also sets the backend's own variables so that its files land under this run's --out.
    """
    backend = os.environ.get("HARNESS_REPORT_TO", "none")
    if backend == "none":
        return {"report_to": []}
    return {"report_to": [backend], "run_name": os.environ.get("HARNESS_RUN_NAME", "train"),
            "project": "meta-agent", "trackio_static_space_id": False}


def grpo_args(cfg: HarnessConfig, steps: int, seed: int, output_dir: str) -> GRPOConfig:
    rl = cfg.rl
    dtype = training_dtype(rl.precision)
    per_pass, passes = rl.micro_batch()
    return GRPOConfig(
        output_dir=output_dir,
        max_steps=steps,
        # TRL generates the whole step's batch at once (steps_per_generation defaults to the accumulation
        # steps) and then runs it through forward and backward `per_pass` completions at a time.
        per_device_train_batch_size=per_pass,
        num_generations=rl.num_generations,
        gradient_accumulation_steps=passes,
        max_completion_length=rl.max_completion_length,
        learning_rate=rl.learning_rate,
        temperature=rl.temperature,
        top_p=rl.top_p,
        beta=rl.beta,
        epsilon=rl.epsilon,
        epsilon_high=rl.epsilon_high,
        loss_type=rl.loss_type,
        scale_rewards=rl.scale_rewards,
        mask_truncated_completions=rl.mask_truncated_completions,
        # TRL defaults to bf16 and gradient checkpointing; both cost ~10x on CPUs without bf16 matmul.
        bf16=dtype == torch.bfloat16,
        fp16=dtype == torch.float16,
        gradient_checkpointing=rl.gradient_checkpointing,
        use_cpu=not torch.cuda.is_available(),
        shuffle_dataset=False,  # the curriculum already ordered the tasks
        logging_steps=1,
        save_strategy="no",
        **tracking(),
        seed=seed,
        disable_tqdm=True,
        remove_unused_columns=False,
        **generation(cfg),
    )


def generation(cfg: HarnessConfig) -> dict[str, Any]:
    """TRL's generation settings: its own `generate` (default), or vLLM colocated on the training GPU."""
    if cfg.rl.generation != "vllm":
        return {}
    return {"use_vllm": True, "vllm_mode": "colocate",
            "vllm_gpu_memory_utilization": cfg.rl.vllm_gpu_memory_utilization}


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(
    policy: Path, steps: int, seed: int, out: Path, tasks_file: Path, history: Path | None, progress: bool
) -> None:
    started = time.monotonic()
    cfg = load_config()
    problem = generation_problem(cfg, torch.cuda.is_available(), importlib.util.find_spec("vllm") is not None)
    if problem:
        raise ConfigError(problem)
    domain = load_domain(cfg.domain)
    seed_everything(seed)
    out.mkdir(parents=True, exist_ok=True)
    tasks = read_tasks(tasks_file)
    by_id = {t["id"]: t for t in tasks}
    ordered = order_tasks(tasks, steps * cfg.rl.prompts_per_step, seed, cfg.curriculum, history)
    dataset = Dataset.from_list([{"prompt": domain.build_messages(t), "task_id": t["id"]} for t in ordered])
    model, tokenizer, base, peft_config = load(policy, cfg)
    make_rollout_func = getattr(domain, "make_rollout_func", None)
    extra = {"rollout_func": make_rollout_func(cfg, by_id)} if make_rollout_func else {}
    rollouts = JsonlAppender(out / "rollouts.jsonl")
    metrics = JsonlAppender(out / "metrics.jsonl")
    trainer_ref: list[HarnessGRPOTrainer] = []
    with tempfile.TemporaryDirectory(prefix="grpo-") as scratch:
        model, peft_config = warm_start(model, tokenizer, peft_config, domain, cfg, tasks, seed, out, scratch)
        trainer = HarnessGRPOTrainer(
            model=model,
            args=grpo_args(cfg, steps, seed, scratch),
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=peft_config,
            scorer=HarnessScorer(domain, cfg, by_id),
            rollouts_out=rollouts,
            merged_dtype=training_dtype(cfg.rl.precision) if cfg.rl.generation == "merged" else None,
            shared_prefix=cfg.rl.shared_prefix,
            skip_zero_advantage=cfg.rl.skip_zero_advantage,
            callbacks=[MetricsCallback(metrics, trainer_ref, progress), FollowShare()],
            **extra,
        )
        trainer_ref.append(trainer)
        trainer.train()
    save_checkpoint(
        trainer.model, tokenizer, out, base=base, steps=steps, seed=seed, parent=policy, commit=harness_commit(),
        optimizer=trainer.optimizer,
    )
    rollouts.commit()
    metrics.commit()
    write_json(
        out / "train_summary.json",
        {"steps": steps, "seed": seed, "wall_time": time.monotonic() - started, "harness_commit": harness_commit()},
    )
