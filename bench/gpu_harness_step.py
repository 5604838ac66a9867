"""The harness's own GRPO step on one GPU against bare TRL on the same GPU (issue target: ratio <= 1.10).

What it measures, in one run, each section guarded so that one failure leaves the others' numbers:

1. the HARNESS: a copy of harness_repo with configs/math.yaml as its harness.yaml (what `meta-agent init`
   builds), run as `python -m harness train --policy P --steps N --seed 0 --out O --tasks T --progress`
   in that copy, with the arguments meta_agent.harness_runner passes, but UNSANDBOXED (the device machine
   has no bubblewrap; meta-agent runs it inside its sandbox). Per-step seconds come from the harness's own
   metrics.jsonl (`wall_time`, one on_log to the next: the whole optimizer step), TRL's `step_time` from
   the log dicts it prints, tokens per step from its rollouts.jsonl (prompt_tokens + completion_tokens);
2. BARE TRL: a plain `trl.GRPOTrainer` in this process with the SAME settings: the GRPOConfig is the one
   the harness builds (harness.train.grpo_args on the same harness.yaml: LoRA r16/alpha32 all-linear,
   4 generations x 2 prompts, 48 completion tokens, beta 0, dapo, bf16 autocast on a bf16 GPU, no
   gradient checkpointing), the same model directory (fp32 master weights, as the harness loads it),
   the same prompts in the same order (the harness's curriculum and build_messages), a reward function
   that returns zeros at once (what the harness's correctness reward gives a random-weight model), a
   timing callback at on_step_end (as bench/gpu_path.py does). Two variants: natural lengths (EOS may
   end a completion early, exactly as in the harness) and forced full length (min_new_tokens =
   max_completion_length, bench/gpu_path.py's setting).

The harness's harness.yaml has no generation-kwargs setting (extra fields are forbidden), so its
completion lengths cannot be forced; a random-weight model almost never samples EOS (about 1 in 49152 per
token), so lengths come out (nearly) full anyway. The fair comparison is harness vs bare-natural, s/step
(identical work when the completion lengths match, which the table shows) and tokens/s (when they do not).
Order (--plan): harness, bare natural, bare forced, then the harness again while time is left (drift check).

The harness bug this script found on CUDA (2026-11, an H200): harness/trainer.py made the filter weights
on the CPU beside TRL's advantages on the GPU, so `harness train` died at step 1 ("Expected all tensors to
be on the same device"); the SWE agent's turn inputs had the same fault. Both are fixed in harness_repo
(weight_advantages, left_padded; tests/foundation/test_device_placement.py). The published run
(bench/results/gpu-path/harness_step.*) predates the fix and ran on a copy patched with exactly that line.

Model: SmolLM2-135M's architecture (LlamaConfig, see bench/gpu_path.py) with RANDOM weights, saved with the
SmolLM2 tokenizer as a plain transformers model directory (the policy dir meta-agent passes). Tasks:
a JSONL of simple arithmetic problems in meta_agent.contract.Task's format (id, prompt, answer, difficulty,
source, metadata), taken from the math prompts in .gpu/prompts.json.

    python bench/gpu_harness_step.py --out DIR            # on a CUDA machine (about 2-3 minutes)
    python bench/gpu_harness_step.py --out DIR --plan harness,bare,harness --timed 6
                                                          # the settings of bench/results/gpu-path/harness_step.*
    python bench/gpu_harness_step.py --smoke --out DIR    # tiny model and lengths, on CPU, to test the script

Needs torch, transformers, trl, peft, datasets, pydantic, pyyaml (the harness's own imports); not
meta-agent's other dependencies. Writes DIR/harness_step.json and DIR/harness_step.md.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import gpu_path as gp  # noqa: E402  (the bare-TRL step code and model of bench/gpu_path.py)

T0 = time.monotonic()


log, sync, fmt = gp.log, gp.sync, gp.fmt  # one copy of each, in bench/gpu_path.py


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


class Results:
    def __init__(self, out: Path | None) -> None:
        self.out = out
        self.data: dict[str, Any] = {"env": {}, "settings": {}, "runs": [], "comparison": {}, "errors": {},
                                     "notes": []}

    def error(self, section: str) -> None:
        tb = traceback.format_exc()
        log(f"SECTION {section} FAILED:\n{tb}")
        self.data["errors"][section] = tb[-4000:]
        self.save()

    def save(self) -> None:
        self.data["elapsed_s"] = round(time.monotonic() - T0, 1)
        compare(self.data)
        if self.out is None:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "harness_step.json").write_text(json.dumps(self.data, indent=1, default=str))
        (self.out / "harness_step.md").write_text(markdown(self.data))


def compare(d: dict[str, Any]) -> None:
    runs = d.get("runs", [])
    timed = [r for r in runs if r["kind"] == "harness" and r.get("step_s")]
    harness = [r for r in timed if "transformers" not in r["name"]]
    old_path = [r for r in timed if "transformers" in r["name"]]  # rl.generation: transformers
    bare = {r["name"]: r for r in runs if r["kind"] == "bare" and r.get("step_s")}
    c: dict[str, Any] = {}
    if old_path:
        c["old_path_step_s"] = statistics.median(r["step_s"] for r in old_path)
        if harness:
            c["ratio_harness_over_old_path"] = statistics.median(r["step_s"] for r in harness) / c["old_path_step_s"]
        b = bare.get("bare TRL, natural lengths")
        if b:
            c["ratio_old_path_vs_bare_natural"] = c["old_path_step_s"] / b["step_s"]
    if harness:
        h_step = statistics.median(r["step_s"] for r in harness)
        h_tok = [r["tokens_per_step"] for r in harness if r.get("tokens_per_step")]
        h_tps = statistics.mean(h_tok) / h_step if h_tok else None  # tokens/step over the median s/step
        c["harness_step_s"] = h_step
        c["harness_tokens_per_s"] = h_tps
        for key, name in (("natural", "bare TRL, natural lengths"), ("forced", "bare TRL, forced full length")):
            b = bare.get(name)
            if b:
                c[f"ratio_step_vs_bare_{key}"] = h_step / b["step_s"]
                if b.get("tokens_per_s") and h_tps:
                    c[f"ratio_tokens_per_s_bare_{key}_over_harness"] = b["tokens_per_s"] / h_tps
                if b.get("trl_step_s") and harness[0].get("trl_step_s"):
                    c[f"ratio_trl_step_time_vs_bare_{key}"] = (
                        statistics.median(r["trl_step_s"] for r in harness if r.get("trl_step_s")) / b["trl_step_s"])
        nat = c.get("ratio_step_vs_bare_natural")
        if nat is not None:
            c["target"] = "harness s/step / bare TRL s/step <= 1.10"
            c["meets_target"] = nat <= 1.10
    d["comparison"] = c


def spread(r: dict[str, Any]) -> str:
    xs = r.get("step_times_s", [])[r.get("warmup", 0):]
    return f"{min(xs):.3g} / {statistics.mean(xs):.3g}" if xs else ""


def markdown(d: dict[str, Any]) -> str:
    env, s, c = d.get("env", {}), d.get("settings", {}), d.get("comparison", {})
    lines = ["# Harness GRPO step vs bare TRL on one GPU (bench/gpu_harness_step.py)", "",
             f"Device: {env.get('gpu', '?')}; torch {env.get('torch')}, transformers {env.get('transformers')}, "
             f"trl {env.get('trl')}, peft {env.get('peft')}, python {env.get('python')}.", "",
             f"Settings (harness.yaml = harness_repo/configs/math.yaml"
             f"{' + smoke overrides' if s.get('smoke') else ''}): "
             f"{json.dumps(s.get('rl', {}))}; policy {json.dumps(s.get('policy', {}))}; "
             f"training dtype {s.get('dtype')}.", "",
             f"Model: SmolLM2-135M architecture, random weights{' (smoke: tiny)' if s.get('smoke') else ''}. "
             "Harness run UNSANDBOXED "
             "(`python -m harness train` in a copy of harness_repo, no bubblewrap on the device machine).", "",
             "| run | steps (warm-up + timed) | s/step (median, timed) | min / mean s/step (timed) | "
             "TRL step_time (median) | completion tokens/step | tokens/step | tokens/s | completion tokens/s | "
             "process / train wall s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d.get("runs", []):
        lines.append(
            f"| {r['name']} | {r.get('warmup')} + {r.get('timed')} | {fmt(r.get('step_s'))} | "
            f"{spread(r)} | {fmt(r.get('trl_step_s'))} | {fmt(r.get('completion_tokens_per_step'), '.1f')} | "
            f"{fmt(r.get('tokens_per_step'), '.1f')} | {fmt(r.get('tokens_per_s'), '.0f')} | "
            f"{fmt(r.get('completion_tokens_per_s'), '.0f')} | {fmt(r.get('wall_s'), '.1f')} |")
    lines += ["", "## Ratio", ""]
    if c:
        if c.get("old_path_step_s"):
            lines += [f"- rl.generation transformers (the old path) s/step: {fmt(c.get('old_path_step_s'))}; "
                      f"harness (rl.generation merged) / old path: {fmt(c.get('ratio_harness_over_old_path'), '.3f')}"
                      f"; old path / bare TRL (natural lengths, the same sampling path): "
                      f"{fmt(c.get('ratio_old_path_vs_bare_natural'), '.3f')}"]
        lines += [f"- harness s/step (median over harness runs): {fmt(c.get('harness_step_s'))}",
                  f"- harness / bare TRL (natural lengths, the fair comparison): "
                  f"{fmt(c.get('ratio_step_vs_bare_natural'), '.3f')} s/step ratio; "
                  f"tokens/s bare / harness (> 1: harness slower) "
                  f"{fmt(c.get('ratio_tokens_per_s_bare_natural_over_harness'), '.3f')}; TRL step_time ratio "
                  f"{fmt(c.get('ratio_trl_step_time_vs_bare_natural'), '.3f')}",
                  *([f"- harness / bare TRL (forced full length, bench/gpu_path.py's setting): "
                     f"{fmt(c.get('ratio_step_vs_bare_forced'), '.3f')} s/step ratio; tokens/s bare / harness "
                     f"{fmt(c.get('ratio_tokens_per_s_bare_forced_over_harness'), '.3f')}"]
                    if "ratio_step_vs_bare_forced" in c else []),
                  f"- target {c.get('target', 'harness/bare <= 1.10')}: "
                  f"{'met' if c.get('meets_target') else 'NOT met' if 'meets_target' in c else 'not measured'}", ""]
    else:
        lines += ["not measured (see failed sections)", ""]
    if d.get("notes"):
        lines += ["## Notes", ""] + [f"- {n}" for n in d["notes"]] + [""]
    if d.get("errors"):
        lines += ["## Sections that failed", ""]
        for k, tb in d["errors"].items():
            last = [x for x in tb.strip().splitlines() if x.strip()][-1:] or [""]
            lines.append(f"- {k}: {last[0][:300]}")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- set-up: harness copy, policy, tasks

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

    params = gp.save_random_model(path, smoke)
    AutoTokenizer.from_pretrained(str(tok_dir)).save_pretrained(str(path))
    return params


# ---------------------------------------------------------------- the harness, as a subprocess

def harness_run(res: Results, name: str, repo: Path, policy: Path, tasks: Path, out: Path, *, steps: int,
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


# ---------------------------------------------------------------- bare TRL, in this process

def bare_run(res: Results, name: str, repo: Path, policy: Path, tasks_file: Path, *, device: str, steps: int,
             warmup: int, force_len: bool) -> None:
    """A plain GRPOTrainer with the harness's own GRPOConfig, model dir, LoRA settings and prompts."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
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

    def prompt_len(pr: Any) -> int:
        return len(tok.apply_chat_template(pr, add_generation_prompt=True, tokenize=True)["input_ids"])

    def reward(prompts: list[Any], completions: list[Any], completion_ids: list[list[int]], **kw: Any
               ) -> list[float]:
        per_step.append({"completion": sum(len(c) for c in completion_ids),
                         "prompt": sum(prompt_len(x) for x in prompts)})
        return [0.0] * len(completions)

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.trl: list[float] = []
            self.last = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync(device)
            now = time.perf_counter()
            self.times.append(now - self.last)
            self.last = now

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
                   ) -> None:
            if logs and "step_time" in logs:
                self.trl.append(float(logs["step_time"]))

    timer = StepTimer()
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
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
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


# ---------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--smoke", action="store_true", help="tiny model and lengths (CPU test of the script)")
    ap.add_argument("--tok", type=Path, default=ROOT / ".gpu" / "tok")
    ap.add_argument("--prompts", type=Path, default=ROOT / ".gpu" / "prompts.json")
    ap.add_argument("--config", type=Path, default=ROOT / "harness_repo" / "configs" / "math.yaml")
    ap.add_argument("--warmup", type=int, default=None, help="default 2 (smoke: 1)")
    ap.add_argument("--timed", type=int, default=None, help="default 8 (smoke: 2)")
    ap.add_argument("--budget-s", type=float, default=280, help="the repeat harness run is skipped past this")
    ap.add_argument("--plan", default="harness,bare,bare-forced,harness",
                    help="runs in order: harness | harness-transformers (rl.generation: transformers, the "
                         "old sampling path) | bare | bare-forced (a second harness is the repeat)")
    a = ap.parse_args()
    if not a.smoke and not torch.cuda.is_available():  # `make bench` on a CPU machine: say so, stop nothing
        print(f"{Path(__file__).name}: no CUDA GPU here, nothing measured (this benchmark is for a GPU; "
              "the published numbers are in bench/results/gpu-path/; --smoke runs it tiny on the CPU)")
        return
    warmup = a.warmup if a.warmup is not None else (1 if a.smoke else 2)
    timed = a.timed if a.timed is not None else (2 if a.smoke else 8)
    steps = warmup + timed
    deadline = T0 + a.budget_s
    device = "cuda" if torch.cuda.is_available() else "cpu"
    res = Results(a.out)
    res.data["args"] = {k: str(v) for k, v in vars(a).items()}
    res.data["notes"] += [
        "Harness run UNSANDBOXED: `python -m harness train` directly in a copy of harness_repo (the device "
        "machine has no bubblewrap); meta-agent runs the same command inside its sandbox.",
        "Random-weight SmolLM2-135M architecture: the harness's correctness reward is 0 for (nearly) every "
        "rollout, so advantages are 0; the bare run's reward returns zeros too. TRL still runs the full loss "
        "forward/backward and optimizer step either way, so the work per step is the same.",
        "Per-step seconds: harness = metrics.jsonl wall_time (on_log to on_log); bare = on_step_end to "
        "on_step_end after a CUDA sync. Both cover the whole optimizer step (generation, scoring, loss, "
        "backward, optimizer, callbacks). TRL step_time covers training_step only (no optimizer step).",
        "The harness cannot force completion lengths (harness.yaml has no generation-kwargs field); compare "
        "s/step with 'bare TRL, natural lengths' where completion tokens/step match, else tokens/s.",
    ]
    try:
        res.data["env"] = {"python": platform.python_version(), "device": device, "torch": torch.__version__,
                           "transformers": gp.version("transformers"), "trl": gp.version("trl"),
                           "peft": gp.version("peft"), "pydantic": gp.version("pydantic"),
                           "gpu": torch.cuda.get_device_name(0) if device == "cuda"
                           else f"none (CPU, {os.cpu_count()} cores)"}
        log(f"env: {json.dumps(res.data['env'])}")
        res.save()
    except Exception:
        res.error("env")

    scratch = tempfile.TemporaryDirectory(prefix="harness-step-")
    work = Path(scratch.name)
    repo, policy, tasks = work / "harness", work / "policy", work / "tasks" / "train.jsonl"
    try:
        raw = make_harness_copy(repo, a.config, a.smoke)
        tasks.parent.mkdir(parents=True)
        _tok, prompts = gp.load_inputs(a.tok, a.prompts)
        n = write_tasks(tasks, prompts)
        params = make_policy(policy, a.tok, a.smoke)
        sys.path.insert(0, str(repo))
        from harness.policy import training_dtype

        res.data["settings"].update(smoke=a.smoke, rl=raw.get("rl", {}), policy=raw.get("policy", {}),
                                    dtype=str(training_dtype(raw.get("rl", {}).get("precision", "auto"))),
                                    tasks=n, params=params, steps=steps, warmup=warmup)
        log(f"set-up: harness copy {repo}, {n} tasks, policy {params / 1e6:.1f}M params, "
            f"dtype {res.data['settings']['dtype']}")
        res.save()
    except Exception:
        res.error("set-up")
        return

    import yaml

    try:  # the same harness sampling with the trained model itself, as it did before rl.generation: merged
        old_repo = work / "harness-transformers"
        shutil.copytree(repo, old_repo)
        raw_old = dict(raw, rl={**raw.get("rl", {}), "generation": "transformers"})
        (old_repo / "harness.yaml").write_text(yaml.safe_dump(raw_old, sort_keys=False))
    except Exception:
        res.error("set-up (harness-transformers)")
    names = {"harness": ("harness", "harness (python -m harness train)", None),
             "harness-transformers": ("harness", "harness, rl.generation transformers (the old path)", None),
             "bare": ("bare", "bare TRL, natural lengths", False),
             "bare-forced": ("bare", "bare TRL, forced full length", True)}
    plan, seen = [], set()
    for key in a.plan.split(","):
        kind, name, force = names[key.strip()]
        if name in seen:
            name = f"{name}, repeat"
        seen.add(name)
        plan.append((kind, name, force))
    for i, (kind, name, force) in enumerate(plan):
        if name.endswith(", repeat") and time.monotonic() > deadline - 60:
            res.data["notes"].append(f"{name} skipped: time budget spent")
            continue
        try:
            if kind == "harness":
                where = old_repo if "transformers" in name else repo
                harness_run(res, name, where, policy, tasks, work / f"out{i}", steps=steps, warmup=warmup,
                            timeout=max(60.0, deadline - time.monotonic() + 30))
            else:
                bare_run(res, name, repo, policy, tasks, device=device, steps=steps, warmup=warmup,
                         force_len=bool(force))
        except Exception:
            res.error(name)
    res.save()
    log("done")
    print(markdown(res.data))
    scratch.cleanup()


if __name__ == "__main__":
    main()
