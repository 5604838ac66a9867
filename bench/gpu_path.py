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
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.gpu_lib.bare_grpo import TEMPLATE, grpo_run
from bench.gpu_lib.common import (
    ROOT,
    T0,
    SectionResults,
    fmt,
    load_inputs,
    log,
    matmul_tflops,
    notes_and_failures,
    save_random_model,
    version,
)
from bench.gpu_lib.eval_paths import eval_rows

EVAL_MAX_NEW_TOKENS = 48  # meta_agent.domains.settings.MathSettings.eval_max_new_tokens


class Results(SectionResults):
    stem = "gpu_path"

    def __init__(self, out: Path | None) -> None:
        super().__init__(out, {"env": {}, "matmul": {}, "grpo": [], "eval": [], "vllm": {}, "errors": {},
                               "notes": []})

    def render(self) -> str:
        return markdown(self.data)


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
    return "\n".join(lines + notes_and_failures(d))



# ---------------------------------------------------------------- environment and ceilings

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
