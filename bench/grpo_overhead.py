"""Seconds per GRPO step on this machine: the harness (sandboxed, as meta-agent runs it) vs bare TRL.

Five arms, one after another in this run, on the same model, prompts (in the same order) and settings:

  harness          the template as `meta-agent init` builds it: rl.generation merged (completions sampled
                   by a LoRA-merged copy in the training dtype), completion-rows-only log-probs,
                   rl.shared_prefix (each group's prompt encoded once by the learner) and
                   rl.skip_zero_advantage (rows of advantage 0 through the learner without autograd: they move
                   nothing)
  harness-every-row the same harness with rl.skip_zero_advantage: false (autograd through every row)
  harness-unshared the same harness with rl.shared_prefix: false (the learner runs every row whole)
  harness-old      the harness with rl.generation: transformers (TRL samples with the trained model, as
                   the harness did before) and rl.shared_prefix: false; it keeps the completion-rows-only head
  bare TRL         a plain GRPOTrainer with the same settings (bench/_bare_grpo.py): TRL's own path, which
                   is what a step cost before the two changes (the harness/bare ratio was ~1.0)

Steps 2..N of each arm are summed (step 1 pays one-time costs) and the sums compared, so a long prompt in
one step weighs the same in every arm. Also prints the model FLOP rate (~6 x params x tokens per step,
generation included) over this machine's dense matmul rate, fp32 and bf16 (a CPU with AMX runs bf16
matmul several times faster; the harness trains in bf16 autocast only there). The tokens are every row's
prompt and completion in every arm, so the rate is of the same work: an arm that shares a group's prompt
gets credit for the prompt tokens it did not run again (a work rate, not the hardware's FLOP count).

    python bench/grpo_overhead.py [--policy smollm2|tiny] [--steps 6] [--rounds 2] [--stock]

With --rounds 2 every arm runs twice, the second round in reverse order (bare TRL first), and the steps of
both rounds are pooled: the machine's pace drifts within a run, and one round always runs bare TRL last.

Targets (issue #43): harness / bare <= 1.10 (no overhead), harness / bare <= 0.5 (the faster step).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.contract import Task, write_jsonl  # noqa: E402
from meta_agent.domains.math import MathDomain, MathSettings  # noqa: E402
from meta_agent.gitops import init_harness  # noqa: E402
from meta_agent.policy import resolve_policy  # noqa: E402
from meta_agent.training import train_commit  # noqa: E402
from sandboxes import Limits, get_backend  # noqa: E402

# the math template's shape: 2 prompts x 4 completions x 48 tokens per step
PROMPTS, GENERATIONS, MAX_TOKENS = 2, 4, 48


def matmul_flops(dtype: torch.dtype = torch.float32, n: int = 2048, reps: int = 10) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - start)


def n_params(model_dir: Path) -> int:
    from transformers import AutoModelForCausalLM

    return sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(str(model_dir)).parameters())


def prompt_tokens(model_dir: Path, conversations: list[list[dict[str, str]]]) -> list[int]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    return [len(tok.apply_chat_template(c, add_generation_prompt=True, tokenize=True)["input_ids"])
            for c in conversations]


def run_bare(policy: Path, convs: list[list[dict[str, str]]], steps: int, stock: bool,
             precision: str) -> tuple[list[float], list[int]]:
    with tempfile.TemporaryDirectory() as scratch:
        spec = {"model": str(policy), "steps": steps, "generations": GENERATIONS, "prompts_per_step": PROMPTS,
                "max_tokens": MAX_TOKENS, "stock": stock, "precision": precision, "scratch": scratch,
                "conversations": convs}
        out = subprocess.run([sys.executable, str(ROOT / "bench" / "_bare_grpo.py"), json.dumps(spec)],
                             capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["step_times"], result["completion_tokens"]


def run_harness(policy: Path, tasks: list[Task], steps: int, work: Path, sandbox: str, generation: str,
                shared_prefix: bool, skip: bool) -> tuple[list[float], list[int], list[str], float]:
    """(seconds per step, tokens per step, task ids in the order the harness's curriculum fed them, the share of
    steps 2.. rollouts whose advantage was 0)."""
    repo = init_harness(work / "harness", "math")
    cfg_path = Path(repo.working_dir) / "harness.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["rl"].update(num_generations=GENERATIONS, prompts_per_step=PROMPTS, max_completion_length=MAX_TOKENS,
                     generation=generation, shared_prefix=shared_prefix, skip_zero_advantage=skip)
    cfg_path.write_text(yaml.safe_dump(cfg))
    repo.git.add(A=True)
    repo.index.commit("bench shape")
    tasks_file = work / "inputs" / "train_tasks.jsonl"
    write_jsonl(tasks_file, tasks)
    domain = MathDomain(MathSettings())
    run = train_commit(repo=repo, commit=repo.head.commit.hexsha, domain=domain, sandbox=get_backend(sandbox),
                       limits=Limits(memory_mb=16_000), policy=policy, root_policy=policy, steps=steps, seed=0,
                       work_dir=work / "work", out_dir=work / "train", tasks_file=tasks_file)
    per_step = [sum(r.prompt_tokens + r.completion_tokens for r in run.rollouts if r.step == s)
                for s in range(1, steps + 1)]
    order = list(dict.fromkeys(r.task_id for r in sorted(run.rollouts, key=lambda r: (r.step, r.group_id))))
    later = [r for r in run.rollouts if r.step > 1]
    still = sum(r.advantage == 0 for r in later) / max(len(later), 1)
    return [m.wall_time for m in run.output.metrics], per_step, order, still


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--stock", action="store_true", help="also run TRL's stock settings (bf16 + gradient "
                    "checkpointing; slow)")
    ap.add_argument("--rounds", type=int, default=1, help="run every arm this many times, alternating the order "
                    "(a round, then the reverse); steps are pooled")
    ap.add_argument("--out", type=Path, help="also write the numbers as JSON here")
    args = ap.parse_args()
    policy = resolve_policy(args.policy)
    tasks = MathDomain(MathSettings(train_size=args.steps * PROMPTS)).tasks("train")[: args.steps * PROMPTS]
    sys.path.insert(0, str(ROOT / "harness_repo"))
    from harness.math.prompts import build_messages
    from harness.policy import training_dtype

    precision = "bf16" if training_dtype("auto") == torch.bfloat16 else "fp32"
    params = n_params(policy)
    # bf16 at a smaller size: on a CPU without bf16 instructions (AVX2 only) a 2048-square bf16 product
    # runs for minutes, and the rate is the same at 512
    peak = {"fp32": matmul_flops(torch.float32), "bf16": matmul_flops(torch.bfloat16, n=512, reps=3)}
    print(f"harness precision (measured): {precision}; torch threads {torch.get_num_threads()}")
    print(f"policy {policy.name}: {params / 1e6:.1f}M params; {PROMPTS} prompts x {GENERATIONS} completions x "
          f"{MAX_TOKENS} tokens/step; dense matmul fp32 {peak['fp32'] / 1e9:.0f} GFLOP/s, "
          f"bf16 {peak['bf16'] / 1e9:.0f} GFLOP/s", flush=True)

    by_id = {t.id: t for t in tasks}
    harness_arms = (("harness", "merged", True, True), ("harness-every-row", "merged", True, False),
                    ("harness-unshared", "merged", False, False), ("harness-old", "transformers", False, False))
    names = [a[0] for a in harness_arms] + ["bare TRL"]
    arms: dict[str, tuple[list[float], list[int]]] = {}
    order: list[str] = []  # set by the first harness arm, which round 1 runs before bare TRL
    for round_ in range(args.rounds):
        # the machine's pace drifts over a run: later rounds go in reverse order, so no arm always runs last
        for name in (names if round_ % 2 == 0 else names[::-1]):
            if name == "bare TRL":
                convs = [build_messages(by_id[i].model_dump()) for i in order]  # the harness's prompts, its order
                times, ctoks = run_bare(policy, convs, args.steps, stock=False, precision=precision)
                ptoks = prompt_tokens(policy, convs)
                toks = [c + GENERATIONS * sum(ptoks[PROMPTS * s: PROMPTS * (s + 1)]) for s, c in enumerate(ctoks)]
            else:
                _, generation, shared, skip = next(a for a in harness_arms if a[0] == name)
                with tempfile.TemporaryDirectory() as work:
                    times, toks, order, still = run_harness(policy, tasks, args.steps, Path(work), args.sandbox,
                                                            generation, shared, skip)
                print(f"  round {round_ + 1}: {name}: {100 * still:.0f}% of steps 2.. rollouts had advantage 0",
                      flush=True)
            # step 1 pays one-time costs (allocator warm-up, lazy init) in every arm: each round keeps 2..N
            kept = arms.setdefault(name, ([], []))
            kept[0].extend(times[1:])
            kept[1].extend(toks[1:])
            print(f"  round {round_ + 1}: {name}: {[round(t, 1) for t in times]} s", flush=True)

    total = {k: sum(v[0]) for k, v in arms.items()}
    tokens = {k: sum(v[1]) for k, v in arms.items()}
    n = (args.steps - 1) * args.rounds
    print(f"\n| arm | s/step (mean of steps 2..{args.steps}) | tokens/step | x bare TRL | model GFLOP/s | "
          "% of fp32 matmul | % of bf16 matmul |\n|---|---|---|---|---|---|---|")
    rows = {}
    for k in arms:
        rate = 6 * params * tokens[k] / total[k]
        rows[k] = {"s_per_step": total[k] / n, "tokens_per_step": tokens[k] / n, "ratio_vs_bare": total[k] /
                   total["bare TRL"], "gflops": rate / 1e9, "pct_fp32": 100 * rate / peak["fp32"],
                   "pct_bf16": 100 * rate / peak["bf16"]}
        r = rows[k]
        print(f"| {k} | {r['s_per_step']:.2f} | {r['tokens_per_step']:.0f} | {r['ratio_vs_bare']:.2f} | "
              f"{r['gflops']:.0f} | {r['pct_fp32']:.0f}% | {r['pct_bf16']:.1f}% |")
    print(f"RATIO harness/bare seconds per step = {rows['harness']['ratio_vs_bare']:.3f}  (targets: <= 1.10 "
          "overhead; <= 0.5 the faster step)")
    print(f"RATIO harness-unshared/harness-old (the sampling change alone) = "
          f"{total['harness-unshared'] / total['harness-old']:.3f}")
    print(f"RATIO harness-every-row/harness-unshared (the shared prefix alone) = "
          f"{total['harness-every-row'] / total['harness-unshared']:.3f}")
    print(f"RATIO harness/harness-every-row (still rows through the learner without autograd alone) = "
          f"{total['harness'] / total['harness-every-row']:.3f}")
    if args.stock:
        s_times, s_ctoks = run_bare(policy, convs, 2, stock=True, precision=precision)
        s_tok = s_ctoks[-1] + GENERATIONS * sum(ptoks[PROMPTS: 2 * PROMPTS])
        rate = 6 * params * s_tok / s_times[-1]
        print(f"stock TRL settings (bf16, gradient checkpointing): {s_times[-1]:.2f} s/step; FLOP rate "
              f"{rate / 1e9:.1f} GFLOP/s = {100 * rate / peak['fp32']:.1f}% of dense fp32 matmul")
    if args.out:
        args.out.write_text(json.dumps({"policy": policy.name, "steps": args.steps, "precision": precision,
                                        "peak_gflops": {k: v / 1e9 for k, v in peak.items()}, "arms": rows,
                                        "step_times": {k: v[0] for k, v in arms.items()}}, indent=1))


if __name__ == "__main__":
    main()
