"""The GPU path, measured: GRPO step time and sealed-evaluator throughput on one CUDA GPU (issue #43).

What it measures, in one run, each section guarded so that one failure leaves the others' numbers:

1. the environment: GPU name (nvidia-smi), torch / transformers / trl / peft versions, and whether vLLM
   imports (its error when it does not);
2. dense matmul rates on this device (bf16, and fp32 with TF32 off, PyTorch's default) as ceilings;
3. GRPO seconds per step with bare TRL `GRPOTrainer` and its own HF `generate`, at the math template's
   settings (harness_repo/configs/math.yaml: LoRA r16/alpha32 all-linear, 2 prompts x 4 generations = 8
   completions per step, 48 completion tokens, beta 0, dapo loss, no gradient checkpointing), fp32 and
   bf16 (fp32 master weights + bf16 autocast, what `precision: auto` picks on a bf16 GPU); one extra bf16
   run with 64 completions per step shows how the step scales with batch. Warm-up steps are dropped, the
   median of the timed steps is reported, with the generation share, tokens/s and the model FLOP rate
   (~6 x params x tokens processed, generation included) against the measured bf16 matmul rate;
4. the sealed math evaluator's greedy throughput (64 math prompts with the evaluator's system prompt,
   max_new_tokens = MathSettings.eval_max_new_tokens = 48) through HF `generate`: plain (dynamic cache),
   static KV cache without compile, and static cache + torch.compile (transformers' auto-compile of the
   decode step), at batch sizes 8, 16 (the evaluator's default) and 64, in fp32 (what the evaluator runs
   today: `load_for_inference` keeps fp32) and bf16; each fast path's greedy token ids are compared
   with the plain path's at the same dtype and batch size (the count of sequences that differ).

The model is SmolLM2-135M's architecture (LlamaConfig: vocab 49152, hidden 576, 30 layers, 9 heads,
3 KV heads, tied embeddings) with RANDOM weights: the real weights (a 98 MB GGUF) cannot travel to the
device machine. Timing depends on shapes and token counts only, so every completion is forced to its full
length (min_new_tokens = max_new_tokens): a random model's answers are noise, and its near-uniform logits
make greedy argmax ties, hence fast-vs-plain differences, likelier than a trained model's.

vLLM rows (TRL colocate generation; the evaluator served through vLLM) are measured only where `import
vllm` works; otherwise they are left empty with the reason.

    python bench/gpu_path.py --out DIR            # on a CUDA machine (about 3-4 minutes on an H100/H200)
    python bench/gpu_path.py --smoke --out DIR    # tiny sizes, on CPU, to test the script

Inputs: a tokenizer folder and a prompts file (default .gpu/tok and .gpu/prompts.json, built from
meta_agent's SmolLM2 tokenizer and MathDomain when missing). Writes DIR/gpu_path.json and DIR/gpu_path.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
T0 = time.monotonic()

# harness_repo/configs/math.yaml
TEMPLATE: dict[str, Any] = {
    "num_generations": 4, "prompts_per_step": 2, "max_completion_length": 48, "learning_rate": 2e-5,
    "temperature": 1.0, "top_p": 1.0, "beta": 0.0, "epsilon": 0.2, "epsilon_high": 0.2,
    "loss_type": "dapo", "scale_rewards": "group", "mask_truncated_completions": False,
    "gradient_checkpointing": False, "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.0,
}
EVAL_MAX_NEW_TOKENS = 48  # meta_agent.domains.settings.MathSettings.eval_max_new_tokens
SMOLLM2_135M: dict[str, Any] = {
    "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
    "num_attention_heads": 9, "num_key_value_heads": 3, "tie_word_embeddings": True,
    "rope_theta": 100000.0, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
    "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2,
}


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


class Results:
    """Everything measured, written to DIR after every section (a timeout still leaves what ran)."""

    def __init__(self, out: Path | None) -> None:
        self.out = out
        self.data: dict[str, Any] = {"env": {}, "matmul": {}, "grpo": [], "eval": [], "vllm": {}, "errors": {},
                                     "notes": []}

    def error(self, section: str) -> None:
        tb = traceback.format_exc()
        log(f"SECTION {section} FAILED:\n{tb}")
        self.data["errors"][section] = tb[-4000:]
        self.save()

    def save(self) -> None:
        self.data["elapsed_s"] = round(time.monotonic() - T0, 1)
        if self.out is None:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "gpu_path.json").write_text(json.dumps(self.data, indent=1, default=str))
        (self.out / "gpu_path.md").write_text(markdown(self.data))


def fmt(v: Any, spec: str = ".3g") -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def markdown(d: dict[str, Any]) -> str:
    env, mm = d.get("env", {}), d.get("matmul", {})
    lines = ["# GPU path (bench/gpu_path.py)", "",
             f"Device: {env.get('gpu', '?')}; torch {env.get('torch')}, transformers {env.get('transformers')}, "
             f"trl {env.get('trl')}, peft {env.get('peft')}; vLLM: {env.get('vllm', '?')}.", "",
             f"Dense matmul: bf16 {fmt(mm.get('bf16_tflops'))} TFLOP/s, fp32 (no TF32) "
             f"{fmt(mm.get('fp32_tflops'))} TFLOP/s.", "",
             "Model: SmolLM2-135M architecture, random weights; every completion forced to full length.", "",
             "## GRPO step (bare TRL GRPOTrainer, LoRA r16)", "",
             "| run | generation | completions x tokens | s/step (median) | generation s/step | tokens/step | "
             "tokens/s | completion tokens/s | model TFLOP/s | % of bf16 matmul | % of fp32 matmul |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d.get("grpo", []):
        lines.append(f"| {r['name']} | {r['generation']} | {r['completions']} x {r['max_completion_length']} | "
                     f"{fmt(r.get('step_s'))} | {fmt(r.get('generate_s'))} | {fmt(r.get('tokens_per_step'), '.0f')} | "
                     f"{fmt(r.get('tokens_per_s'), '.0f')} | {fmt(r.get('completion_tokens_per_s'), '.0f')} | "
                     f"{fmt(r.get('model_tflops'))} | {fmt(r.get('pct_of_bf16_matmul'), '.2f')} | "
                     f"{fmt(r.get('pct_of_fp32_matmul'), '.2f')} |")
    v = d.get("vllm", {})
    lines.append("| bf16 (template) | vLLM colocate | 8 x 48 | | | | | | | | |")
    lines += ["", f"vLLM colocate row left empty: {v.get('reason', 'not run')}", "",
              f"## Sealed evaluator, greedy ({(d.get('eval') or [{}])[0].get('prompts', '?')} math prompts)", "",
              "| dtype | path | batch | max_new_tokens | prompts/s | tokens/s | x plain | timed s | first call s | "
              "sequences differing from plain |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d.get("eval", []):
        lines.append(f"| {r['dtype']} | {r['path']} | {r['batch_size']} | {r['max_new_tokens']} | "
                     f"{fmt(r.get('prompts_per_s'), '.1f')} | {fmt(r.get('tokens_per_s'), '.0f')} | "
                     f"{fmt(r.get('speedup_vs_plain'), '.2f')} | {fmt(r.get('timed_s'))} | "
                     f"{fmt(r.get('first_call_s'))} | "
                     f"{fmt(r.get('differ_vs_plain'))} |")
    lines.append("| fp32 | vLLM server | | | | | | | | |")
    lines += ["", f"vLLM server row left empty: {v.get('reason', 'not run')}", ""]
    if d.get("notes"):
        lines += ["## Notes", ""] + [f"- {n}" for n in d["notes"]] + [""]
    if d.get("errors"):
        lines += ["## Sections that failed", ""]
        for k, tb in d["errors"].items():
            last = [x for x in tb.strip().splitlines() if x.strip()][-1:] or [""]
            lines.append(f"- {k}: {last[0][:300]}")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- environment and ceilings

def version(name: str) -> str | None:
    try:
        return importlib.import_module(name).__version__
    except Exception as e:
        return f"not importable: {type(e).__name__}: {e}"[:300]


def environment(res: Results, device: str) -> None:
    env = res.data["env"]
    env.update(python=platform.python_version(), device=device, torch=torch.__version__,
               cuda=torch.version.cuda, transformers=version("transformers"), trl=version("trl"),
               peft=version("peft"), accelerate=version("accelerate"), datasets=version("datasets"))
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name(0)
        props = torch.cuda.get_device_properties(0)
        env["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
        env["sms"] = props.multi_processor_count
        with contextlib.suppress(Exception):
            env["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=30).stdout.strip()
    else:
        env["gpu"] = f"none (CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    try:
        import vllm

        env["vllm"] = f"imports ({vllm.__version__})"
    except Exception as e:
        env["vllm"] = f"does not import: {type(e).__name__}: {e}"[:300]
    env["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    log(f"env: {json.dumps(env)}")
    res.save()


def matmul_tflops(device: str, dtype: torch.dtype, n: int, reps: int = 10) -> float:
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e12


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# ---------------------------------------------------------------- model, tokenizer, prompts

def load_inputs(tok_dir: Path, prompts_file: Path) -> tuple[Any, dict[str, Any]]:
    from transformers import AutoTokenizer

    if not (tok_dir / "tokenizer.json").is_file():  # built here from the project (needs its venv)
        sys.path.insert(0, str(ROOT))
        from meta_agent.policy import smollm2_tokenizer

        smollm2_tokenizer().save_pretrained(str(tok_dir))
    if not prompts_file.is_file():
        sys.path[:0] = [str(ROOT), str(ROOT / "harness_repo")]
        from harness.math.prompts import build_messages
        from meta_agent.domains.math import EVAL_SYSTEM, MathDomain, MathSettings

        d = MathDomain(MathSettings(train_size=128))
        tasks = d.tasks("train")  # timing prompts only, but never the sealed splits: train holds both sets
        train, test = tasks[:64], tasks[64:128]
        prompts_file.parent.mkdir(parents=True, exist_ok=True)
        prompts_file.write_text(json.dumps({
            "train": [build_messages(t.model_dump()) for t in train], "train_answers": [t.answer for t in train],
            "eval": [[{"role": "system", "content": EVAL_SYSTEM}, {"role": "user", "content": t.prompt}]
                     for t in test]}))
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    return tok, json.loads(prompts_file.read_text())


def save_random_model(path: Path, smoke: bool) -> int:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = dict(SMOLLM2_135M)
    if smoke:
        cfg.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**cfg))
    model.generation_config.do_sample = False  # greedy unless a caller samples
    model.save_pretrained(str(path), safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- GRPO

def grpo_run(res: Results, name: str, model_dir: Path, tok: Any, prompts: dict[str, Any], *, device: str,
             precision: str, generations: int, prompts_per_step: int, max_tokens: int, warmup: int, timed: int,
             params: int) -> None:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    steps = warmup + timed
    t = TEMPLATE
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    rng = random.Random(0)
    per_step: list[dict[str, int]] = []

    def prompt_len(p: Any) -> int:
        return len(tok.apply_chat_template(p, add_generation_prompt=True, tokenize=True)["input_ids"])

    def reward(prompts: list[Any], completions: list[Any], completion_ids: list[list[int]], **kw: Any
               ) -> list[float]:
        per_step.append({"completion": sum(len(c) for c in completion_ids),
                         "prompt": sum(prompt_len(p) for p in prompts), "n": len(completion_ids)})
        return [float(rng.random() < 0.5) for _ in completions]  # random 0/1: non-zero advantages

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.last = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync(device)
            now = time.perf_counter()
            self.times.append(now - self.last)
            self.last = now

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
        timer = StepTimer()
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
    if device == "cuda":
        peak_mem = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
    else:
        peak_mem = None
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


# ---------------------------------------------------------------- sealed evaluator throughput

def encode_all(tok: Any, convs: list[Any], device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """All prompts left-padded to one length, as the evaluator's tokenizer pads (padding_side left): one
    prompt length for every batch, so the static cache (and its compiled step) keeps one shape."""
    tok.padding_side = "left"
    texts = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in convs]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


def generate_all(model: Any, tok: Any, ids: torch.Tensor, mask: torch.Tensor, batch: int, max_new: int,
                 path: str) -> torch.Tensor:
    kw: dict[str, Any] = {"max_new_tokens": max_new, "min_new_tokens": max_new, "do_sample": False,
                          "pad_token_id": tok.pad_token_id, "temperature": None, "top_p": None, "top_k": None}
    if path == "static":
        kw.update(cache_implementation="static", disable_compile=True)
    elif path == "static+compile":
        kw.update(cache_implementation="static", disable_compile=False)
    outs = []
    with torch.inference_mode():
        for s in range(0, ids.shape[0], batch):
            gen = model.generate(input_ids=ids[s:s + batch], attention_mask=mask[s:s + batch], **kw)
            outs.append(gen[:, ids.shape[1]:])
    return torch.cat(outs)


def eval_rows(res: Results, model_dir: Path, tok: Any, prompts: dict[str, Any], *, device: str, dtype: str,
              paths: list[str], batches: list[int], n_prompts: int, max_new: int, deadline: float,
              plain_ref: dict[tuple[str, int], torch.Tensor]) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=torch.float32 if dtype == "fp32" else torch.bfloat16).to(device).eval()
    convs = (prompts["eval"] * ((n_prompts + len(prompts["eval"]) - 1) // len(prompts["eval"])))[:n_prompts]
    ids, mask = encode_all(tok, convs, device)
    for path in paths:
        for bs in batches:
            if time.monotonic() > deadline:
                res.data["notes"].append(f"eval {dtype} {path} bs{bs} skipped: time budget spent")
                log(f"eval {dtype} {path} bs{bs}: skipped (deadline)")
                continue
            try:
                sync(device)
                s = time.perf_counter()
                generate_all(model, tok, ids[:bs], mask[:bs], bs, max_new, path)  # warm-up / compile
                sync(device)
                first = time.perf_counter() - s
                s = time.perf_counter()
                out = generate_all(model, tok, ids, mask, bs, max_new, path)
                sync(device)
                wall = time.perf_counter() - s
                if path == "plain":
                    plain_ref[(dtype, bs)] = out.cpu()
                    differ = 0
                else:
                    ref = plain_ref.get((dtype, bs))
                    differ = None if ref is None else int((ref != out.cpu()).any(dim=1).sum())
                base = next((r for r in res.data["eval"] if r["dtype"] == dtype and r["path"] == "plain"
                             and r["batch_size"] == bs), None)
                gen_tokens = int(out.numel())
                row = {"dtype": dtype, "path": path, "batch_size": bs, "prompts": n_prompts,
                       "prompt_len_padded": int(ids.shape[1]), "max_new_tokens": max_new,
                       "generated_tokens": gen_tokens, "timed_s": wall, "first_call_s": first,
                       "prompts_per_s": n_prompts / wall, "tokens_per_s": gen_tokens / wall,
                       "differ_vs_plain": differ,
                       "speedup_vs_plain": base["timed_s"] / wall if base else 1.0}
                res.data["eval"].append(row)
                log(f"eval {dtype} {path} bs{bs}: {n_prompts / wall:.1f} prompts/s, {gen_tokens / wall:.0f} tok/s, "
                    f"first call {first:.1f}s, differing from plain: {differ}")
                res.save()
            except Exception:
                res.error(f"eval {dtype} {path} bs{bs}")
    del model
    if device == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--smoke", action="store_true", help="tiny model and counts (CPU test of the script)")
    ap.add_argument("--tok", type=Path, default=ROOT / ".gpu" / "tok")
    ap.add_argument("--prompts", type=Path, default=ROOT / ".gpu" / "prompts.json")
    ap.add_argument("--budget-s", type=float, default=330, help="optional sections are skipped past this")
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    if not a.smoke and not torch.cuda.is_available():  # `make bench` on a CPU machine: say so, stop nothing
        print(f"{Path(__file__).name}: no CUDA GPU here, nothing measured (this benchmark is for a GPU; "
              "the published numbers are in bench/results/gpu-path/; --smoke runs it tiny on the CPU)")
        return
    deadline = T0 + a.budget_s
    device = "cuda" if torch.cuda.is_available() else "cpu"
    res = Results(a.out)
    res.data["args"] = {k: str(v) for k, v in vars(a).items()}
    res.data["notes"].append("Random-weight SmolLM2-135M architecture; completions forced to full length "
                             "(min_new_tokens = max_new_tokens), so timings reflect shapes, not skill.")
    try:
        environment(res, device)
    except Exception:
        res.error("env")
    try:
        if a.smoke or device != "cuda":
            res.data["matmul"] = {"bf16_tflops": matmul_tflops(device, torch.bfloat16, 256, 3),
                                  "fp32_tflops": matmul_tflops(device, torch.float32, 256, 3), "n": 256}
        else:
            res.data["matmul"] = {"bf16_tflops": matmul_tflops(device, torch.bfloat16, 8192),
                                  "fp32_tflops": matmul_tflops(device, torch.float32, 4096), "n_bf16": 8192,
                                  "n_fp32": 4096, "tf32": torch.backends.cuda.matmul.allow_tf32}
        log(f"matmul: {res.data['matmul']}")
        res.save()
    except Exception:
        res.error("matmul")

    v = res.data["env"].get("vllm", "")
    res.data["vllm"] = {
        "colocate_train_step_s": None, "served_eval_prompts_per_s": None,
        "reason": ("vLLM does not import on this machine, so neither TRL's vllm colocate generation nor the "
                   f"vLLM-served evaluator could run ({v}). Its wheel (hundreds of MB, plus its pinned torch) "
                   "exceeds the 64 MiB that can travel to the device machine, which has no network.")
        if not v.startswith("imports") else "vLLM imports, but this script does not measure it yet",
    }
    res.save()

    scratch = tempfile.TemporaryDirectory()
    model_dir = Path(scratch.name) / "model"
    try:
        tok, prompts = load_inputs(a.tok, a.prompts)
        params = save_random_model(model_dir, a.smoke)
        res.data["model"] = {"architecture": "SmolLM2-135M (LlamaConfig), random init, seed 0",
                             "params": params, "smoke": a.smoke}
        log(f"model: {params / 1e6:.1f}M params")
    except Exception:
        res.error("inputs")
        return

    g, p, L = TEMPLATE["num_generations"], TEMPLATE["prompts_per_step"], TEMPLATE["max_completion_length"]
    warm, timed = (1, 2) if a.smoke else (2, 6)
    if a.smoke:
        L = 8
    runs = [("bf16 (template)", "bf16", g, p, L), ("fp32", "fp32", g, p, L)]
    for name, prec, gens, pps, length in runs:
        if prec == "bf16" and device == "cpu" and not a.smoke:
            continue
        try:
            grpo_run(res, name, model_dir, tok, prompts, device=device, precision=prec, generations=gens,
                     prompts_per_step=pps, max_tokens=length, warmup=warm, timed=timed, params=params)
        except Exception:
            res.error(f"grpo {name}")

    n_prompts, max_new = (16, 8) if a.smoke else (64, EVAL_MAX_NEW_TOKENS)
    batches = [4, 16] if a.smoke else [8, 16, 64]
    plain_ref: dict[tuple[str, int], torch.Tensor] = {}
    for dtype in ("fp32", "bf16"):
        try:
            eval_rows(res, model_dir, tok, prompts, device=device, dtype=dtype, paths=["plain", "static"],
                      batches=batches, n_prompts=n_prompts, max_new=max_new, deadline=deadline, plain_ref=plain_ref)
        except Exception:
            res.error(f"eval {dtype}")

    # Optional, in order of value, each only while time is left.
    if a.smoke or time.monotonic() < deadline - 60:
        try:
            xg, xp = (2, 2) if a.smoke else (8, 8)
            grpo_run(res, f"bf16, {xp} prompts x {xg} generations", model_dir, tok, prompts, device=device,
                     precision="bf16", generations=xg, prompts_per_step=xp, max_tokens=L, warmup=warm,
                     timed=max(2, timed - 2), params=params)
        except Exception:
            res.error("grpo bf16 b64")
    if device == "cuda" and not a.no_compile:
        for dtype, cbatches in (("fp32", [64, 16]), ("bf16", [64])):
            if time.monotonic() > deadline - 45:
                res.data["notes"].append(f"static+compile {dtype} skipped: time budget spent")
                continue
            try:
                eval_rows(res, model_dir, tok, prompts, device=device, dtype=dtype, paths=["static+compile"],
                          batches=cbatches, n_prompts=n_prompts, max_new=max_new, deadline=deadline - 30,
                          plain_ref=plain_ref)
            except Exception:
                res.error(f"eval {dtype} compile")
    else:
        res.data["notes"].append("static+compile not run: no CUDA device (transformers auto-compiles the "
                                 "static-cache decode step on accelerators only)" if device != "cuda"
                                 else "static+compile not run: --no-compile")
    res.save()
    log("done")
    print(markdown(res.data))
    scratch.cleanup()


if __name__ == "__main__":
    main()
