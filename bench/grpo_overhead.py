"""Seconds per GRPO step: the harness (sandboxed, with scoring and rollout records) vs bare TRL.

Also prints the achieved model FLOP rate (~6 x params x tokens processed per step,
generation included) over this machine's dense fp32 matmul rate, for the harness's
CPU settings and for TRL's stock settings (bf16 + gradient checkpointing).

    python bench/grpo_overhead.py [--policy smollm2|tiny] [--steps 5] [--no-stock]

Target: harness / bare <= 1.10.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

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

GENERATIONS, MAX_TOKENS = 8, 24


def matmul_flops(n: int = 2048, reps: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
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


def run_bare(policy: Path, tasks: list[Task], convs: list[list[dict[str, str]]], steps: int, stock: bool,
             precision: str) -> tuple[list[float], list[int]]:
    with tempfile.TemporaryDirectory() as scratch:
        spec = {"model": str(policy), "steps": steps, "generations": GENERATIONS, "max_tokens": MAX_TOKENS,
                "stock": stock, "precision": precision, "scratch": scratch, "answers": [t.answer for t in tasks],
                "conversations": convs}
        out = subprocess.run([sys.executable, str(ROOT / "bench" / "_bare_grpo.py"), json.dumps(spec)],
                             capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["step_times"], result["completion_tokens"]


def run_harness(policy: Path, domain: MathDomain, steps: int, work: Path, sandbox: str
                ) -> tuple[list[float], list[int]]:
    repo = init_harness(work / "harness", "math")
    cfg_path = Path(repo.working_dir) / "harness.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["rl"].update(num_generations=GENERATIONS, prompts_per_step=1, max_completion_length=MAX_TOKENS)
    cfg_path.write_text(yaml.safe_dump(cfg))
    repo.git.add(A=True)
    repo.index.commit("bench shape")
    tasks_file = work / "inputs" / "train_tasks.jsonl"
    write_jsonl(tasks_file, domain.tasks("train")[:steps])
    run = train_commit(repo=repo, commit=repo.head.commit.hexsha, domain=domain, sandbox=get_backend(sandbox),
                       limits=Limits(memory_mb=16_000), policy=policy, root_policy=policy, steps=steps, seed=0,
                       work_dir=work / "work", out_dir=work / "train", tasks_file=tasks_file)
    per_step = [sum(r.prompt_tokens + r.completion_tokens for r in run.rollouts if r.step == s)
                for s in range(1, steps + 1)]
    return [m.wall_time for m in run.output.metrics], per_step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--no-stock", action="store_true", help="skip the slow stock-TRL-settings run")
    args = ap.parse_args()
    policy = resolve_policy(args.policy)
    domain = MathDomain(MathSettings(train_size=max(args.steps, 8)))
    tasks = domain.tasks("train")[: args.steps]
    sys.path.insert(0, str(ROOT / "harness_repo"))
    from harness.math.prompts import build_messages
    from harness.policy import training_dtype

    convs = [build_messages(t.model_dump()) for t in tasks]
    precision = "bf16" if training_dtype("auto") == torch.bfloat16 else "fp32"
    ptoks = prompt_tokens(policy, convs)
    params = n_params(policy)
    peak = matmul_flops()
    print(f"harness precision (measured): {precision}")
    print(f"policy {policy.name}: {params / 1e6:.1f}M params; {GENERATIONS} completions x {MAX_TOKENS} tokens/step; "
          f"dense fp32 matmul {peak / 1e9:.0f} GFLOP/s")

    with tempfile.TemporaryDirectory() as work:
        h_times, h_tokens = run_harness(policy, domain, args.steps, Path(work), args.sandbox)
    b_times, b_ctoks = run_bare(policy, tasks, convs, args.steps, stock=False, precision=precision)
    b_tokens = [c + GENERATIONS * p for c, p in zip(b_ctoks, ptoks, strict=False)]
    # The first step pays one-time costs (allocator warm-up, lazy init) in both; compare the rest.
    h, b = median(h_times[1:]), median(b_times[1:])
    print(f"harness: {h:.2f} s/step (median of steps 2..{args.steps}); bare TRL: {b:.2f} s/step")
    print(f"RATIO harness/bare seconds per step = {h / b:.3f}  (target <= 1.10)")
    h_tok = sum(h_tokens[1:]) / len(h_tokens[1:])
    b_tok = sum(b_tokens[1:]) / len(b_tokens[1:])
    print(f"tokens per step: harness {h_tok:.0f}, bare {b_tok:.0f}; "
          f"seconds per 1k tokens: harness {1000 * h / h_tok:.2f}, bare {1000 * b / b_tok:.2f}")
    print(f"FLOP rate (harness settings): {6 * params * h_tok / h / 1e9:.1f} GFLOP/s = "
          f"{100 * 6 * params * h_tok / h / peak:.1f}% of dense matmul")
    if not args.no_stock:
        s_times, s_ctoks = run_bare(policy, tasks, convs, 2, stock=True, precision=precision)
        s_tok = s_ctoks[-1] + GENERATIONS * ptoks[1]
        s = s_times[-1]
        rate = 6 * params * s_tok / s
        print(f"stock TRL settings (bf16, gradient checkpointing): {s:.2f} s/step; FLOP rate "
              f"{rate / 1e9:.1f} GFLOP/s = {100 * rate / peak:.1f}% of dense matmul")
        print(f"speed-up of the harness settings over stock TRL settings: {s / h:.1f}x")


if __name__ == "__main__":
    main()
