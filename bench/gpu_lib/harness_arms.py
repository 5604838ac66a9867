"""The two arms of bench/gpu_harness_step.py: the harness's own `python -m harness train` in a copy of
harness_repo (a subprocess, unsandboxed: the device machine has no bubblewrap), and a plain TRL
`GRPOTrainer` in this process with the GRPOConfig, model, LoRA settings and prompts the harness builds."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

from bench.gpu_lib.common import (
    ROOT,
    SectionResults,
    counting_reward,
    fmt,
    log,
    median,
    peak_memory_gib,
    save_random_model,
    step_timer,
)


def make_harness_copy(dest: Path, config: Path, smoke: bool) -> dict[str, Any]:
    """A harness repo as `meta-agent init` builds it: the template plus configs/<domain>.yaml as harness.yaml."""
    import yaml

    shutil.copytree(ROOT / "harness_repo", dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    raw = yaml.safe_load(config.read_text())
    if smoke:
        raw.setdefault("rl", {})["max_completion_length"] = 8
    (dest / "harness.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return raw


def write_tasks(path: Path, prompts: dict[str, Any]) -> int:
    """Simple arithmetic problems in meta_agent.contract.Task's format (validated where meta_agent imports)."""
    rows = []
    for i, (conv, ans) in enumerate(zip(prompts["train"], prompts["train_answers"], strict=True)):
        user = next(m["content"] for m in conv if m["role"] == "user")
        rows.append({"id": f"bench-{i:03d}", "prompt": user, "answer": str(ans), "difficulty": 0,
                     "source": "bench/gpu_harness_step", "metadata": {}})
    try:
        sys.path.insert(0, str(ROOT))
        from meta_agent.contract import Task
        from meta_agent.contract import write_jsonl as contract_write

        return contract_write(path, [Task(**r) for r in rows])
    except Exception as e:  # the device machine lacks meta_agent's deps: plain JSON lines, same keys
        log(f"meta_agent.contract not importable ({type(e).__name__}: {e}); writing the same keys as JSON lines")
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return len(rows)
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(ROOT))


def make_policy(path: Path, tok_dir: Path, smoke: bool) -> int:
    from transformers import AutoTokenizer

    params = save_random_model(path, smoke)
    AutoTokenizer.from_pretrained(str(tok_dir)).save_pretrained(str(path))
    return params



def harness_run(res: SectionResults, name: str, repo: Path, policy: Path, tasks: Path, out: Path, *, steps: int,
                warmup: int, timeout: float) -> None:
    cmd = [sys.executable, "-m", "harness", "train", "--policy", str(policy), "--steps", str(steps), "--seed",
           "0", "--out", str(out), "--tasks", str(tasks), "--progress"]
    env = {**os.environ, "HARNESS_COMMIT": "bench", "PYTHONUNBUFFERED": "1"}
    log(f"{name}: {' '.join(cmd)}  (cwd {repo}, unsandboxed)")
    trl_logs: list[dict[str, Any]] = []
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        print(f"  [harness] {line.rstrip()}", flush=True)
        s = line.strip()
        if s.startswith("{") and "step_time" in s:
            with contextlib.suppress(Exception):
                trl_logs.append(ast.literal_eval(s))
        if time.monotonic() > deadline:
            proc.kill()
            break
    rc = proc.wait()
    wall = time.perf_counter() - start
    metrics_file = out / "metrics.jsonl" if (out / "metrics.jsonl").is_file() else out / "metrics.jsonl.partial"
    rollouts_file = out / "rollouts.jsonl" if (out / "rollouts.jsonl").is_file() else out / "rollouts.jsonl.partial"
    metrics = [json.loads(x) for x in metrics_file.read_text().splitlines() if x.strip()] \
        if metrics_file.is_file() else []
    per_step: dict[int, dict[str, int]] = defaultdict(lambda: {"prompt": 0, "completion": 0, "n": 0})
    if rollouts_file.is_file():
        for x in rollouts_file.read_text().splitlines():
            if x.strip():
                r = json.loads(x)
                p = per_step[int(r["step"])]
                p["prompt"] += int(r["prompt_tokens"])
                p["completion"] += int(r["completion_tokens"])
                p["n"] += 1
    summary = json.loads((out / "train_summary.json").read_text()) if (out / "train_summary.json").is_file() else {}
    times = [float(m["wall_time"]) for m in metrics]
    trl_times = [float(x["step_time"]) for x in trl_logs]
    timed_steps = [m["step"] for m in metrics][warmup:]
    tl = [per_step[s] for s in timed_steps if s in per_step]
    step_s = median(times[warmup:])
    comp = statistics.mean(x["completion"] for x in tl) if tl else None
    total = statistics.mean(x["completion"] + x["prompt"] for x in tl) if tl else None
    row = {"name": name, "kind": "harness", "returncode": rc, "warmup": warmup, "timed": len(times[warmup:]),
           "step_times_s": [round(x, 4) for x in times], "trl_step_times_s": [round(x, 4) for x in trl_times],
           "step_s": step_s, "trl_step_s": median(trl_times[warmup:]),
           "completion_tokens_per_step": comp, "tokens_per_step": total,
           "tokens_per_s": total / step_s if total and step_s else None,
           "completion_tokens_per_s": comp / step_s if comp and step_s else None,
           "completion_length_mean_per_step": [m.get("completion_length_mean") for m in metrics],
           "truncation_rate_per_step": [m.get("truncation_rate") for m in metrics],
           "reward_mean_per_step": [m.get("reward_mean") for m in metrics],
           "wall_s": wall, "train_summary_wall_s": summary.get("wall_time"),
           "checkpoint_written": (out / "checkpoint" / "manifest.json").is_file()}
    res.data["runs"].append(row)
    log(f"{name}: rc {rc}, {fmt(step_s)} s/step (TRL step_time {fmt(row['trl_step_s'])}), "
        f"{fmt(total, '.0f')} tokens/step, process {wall:.1f}s")
    res.save()
    if rc != 0:
        raise RuntimeError(f"harness train exited with {rc}")



def bare_run(res: SectionResults, name: str, repo: Path, policy: Path, tasks_file: Path, *, device: str, steps: int,
             warmup: int, force_len: bool) -> None:
    """A plain GRPOTrainer with the harness's own GRPOConfig, model dir, LoRA settings and prompts."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    cwd = os.getcwd()
    sys.path.insert(0, str(repo))
    try:
        os.chdir(repo)  # load_config reads ./harness.yaml
        from harness.config import load_config
        from harness.curriculum import order_tasks
        from harness.domain import load_domain
        from harness.io import read_tasks
        from harness.train import grpo_args, seed_everything

        cfg = load_config()
        domain = load_domain(cfg.domain)
        seed_everything(0)
        tasks = read_tasks(tasks_file)
        ordered = order_tasks(tasks, steps * cfg.rl.prompts_per_step, 0, cfg.curriculum, None)
        rows = [{"prompt": domain.build_messages(t), "task_id": t["id"]} for t in ordered]
    finally:
        os.chdir(cwd)
    tok = AutoTokenizer.from_pretrained(str(policy))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(policy), dtype=torch.float32)
    p = cfg.policy
    lora = LoraConfig(r=p.lora_r, lora_alpha=p.lora_alpha, lora_dropout=p.lora_dropout,
                      target_modules=p.target_modules, task_type="CAUSAL_LM")
    per_step: list[dict[str, int]] = []

    reward = counting_reward(tok, per_step, lambda n: [0.0] * n)
    timer = step_timer(device)
    with tempfile.TemporaryDirectory() as scratch:
        args = grpo_args(cfg, steps, 0, scratch)
        if force_len:
            args.generation_kwargs = {"min_new_tokens": cfg.rl.max_completion_length}
        res.data["settings"].setdefault("grpo_config", {k: str(v) for k, v in args.to_dict().items()
                                                        if k in GRPO_KEYS})
        start = time.perf_counter()
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=Dataset.from_list(rows),
                              processing_class=tok, callbacks=[timer], peft_config=lora)
        mixed = str(getattr(trainer.accelerator, "mixed_precision", "?"))
        timer.last = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - start
    peak = peak_memory_gib(device)
    step_s = median(timer.times[warmup:])
    tl = per_step[warmup:steps]
    comp = statistics.mean(x["completion"] for x in tl) if tl else None
    total = statistics.mean(x["completion"] + x["prompt"] for x in tl) if tl else None
    row = {"name": name, "kind": "bare", "force_len": force_len, "generation_kwargs": args.generation_kwargs,
           "accelerate_mixed": mixed, "warmup": warmup,
           "timed": len(timer.times[warmup:]), "step_times_s": [round(x, 4) for x in timer.times],
           "trl_step_times_s": [round(x, 4) for x in timer.trl], "step_s": step_s,
           "trl_step_s": median(timer.trl[warmup:]), "completion_tokens_per_step": comp, "tokens_per_step": total,
           "tokens_per_s": total / step_s if total and step_s else None,
           "completion_tokens_per_s": comp / step_s if comp and step_s else None,
           "completion_tokens_per_step_all": [x["completion"] for x in per_step], "wall_s": wall,
           "peak_memory_gib": peak}
    res.data["runs"].append(row)
    log(f"{name}: {fmt(step_s)} s/step (TRL step_time {fmt(row['trl_step_s'])}), {fmt(total, '.0f')} tokens/step, "
        f"mixed precision {mixed}")
    res.save()
    del trainer, model
    if device == "cuda":
        torch.cuda.empty_cache()


GRPO_KEYS = {"per_device_train_batch_size", "num_generations", "gradient_accumulation_steps",
             "max_completion_length", "learning_rate", "temperature", "top_p", "beta", "epsilon", "epsilon_high",
             "loss_type", "scale_rewards", "mask_truncated_completions", "bf16", "fp16", "gradient_checkpointing",
             "use_vllm", "generation_kwargs", "max_steps"}

