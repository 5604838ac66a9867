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

Model: SmolLM2-135M's architecture (LlamaConfig, `SMOLLM2_135M` in bench/gpu_lib/common.py) with RANDOM
weights, saved with the SmolLM2 tokenizer as a plain transformers model directory (the policy dir meta-agent
passes). Tasks: a JSONL of simple arithmetic problems in meta_agent.contract.Task's format (id, prompt,
answer, difficulty, source, metadata), taken from the math prompts in .gpu/prompts.json.

    python bench/gpu_harness_step.py --out DIR            # on a CUDA machine (about 2-3 minutes)
    python bench/gpu_harness_step.py --out DIR --plan harness,bare,harness --timed 6
                                                          # the settings of bench/results/gpu-path/harness_step.*
    python bench/gpu_harness_step.py --smoke --out DIR    # tiny model and lengths, on CPU, to test the script

Needs torch, transformers, trl, peft, datasets, pydantic, pyyaml (the harness's own imports); not
meta-agent's other dependencies. Writes DIR/harness_step.json and DIR/harness_step.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.gpu_lib.common import ROOT, T0, SectionResults, fmt, load_inputs, log, notes_and_failures, version
from bench.gpu_lib.harness_arms import bare_run, harness_run, make_harness_copy, make_policy, write_tasks


class Results(SectionResults):
    stem = "harness_step"

    def __init__(self, out: Path | None) -> None:
        super().__init__(out, {"env": {}, "settings": {}, "runs": [], "comparison": {}, "errors": {},
                               "notes": []})

    def before_save(self) -> None:
        compare(self.data)

    def render(self) -> str:
        return markdown(self.data)


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
    return "\n".join(lines + notes_and_failures(d))



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
                           "transformers": version("transformers"), "trl": version("trl"),
                           "peft": version("peft"), "pydantic": version("pydantic"),
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
        _tok, prompts = load_inputs(a.tok, a.prompts)
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
