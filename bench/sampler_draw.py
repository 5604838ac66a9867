"""The harness's sampler: each token drawn by inverse CDF ÷ by `torch.multinomial` (harness/sampling.py).

The merged sampler (harness/merged_policy.py) of SmolLM2 with a LoRA r16 adapter samples the template's
shape, 8 rows x 48 new tokens at temperature 1 from 51-token prompts, with transformers' `generate` as
TRL calls it; the two ways of drawing alternate, `--repeats` times each, from the same seeds. The draws
differ (another random stream from the same distribution: tests/foundation/test_fast_sampling.py).

    python bench/sampler_draw.py [--repeats 3] [--out bench/results/sampler-draw/table.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "harness_repo"))

from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.policy import resolve_policy  # noqa: E402

ROWS, PROMPT, NEW = 8, 51, 48


def _sample(model: torch.nn.Module, ids: torch.Tensor, fast: bool, seed: int) -> float:
    """Seconds for one generation."""
    from harness.sampling import fast_categorical

    torch.manual_seed(seed)
    started = time.perf_counter()
    with torch.no_grad(), fast_categorical(fast):
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW,
                             min_new_tokens=NEW, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                             pad_token_id=0)
    assert out.shape == (ROWS, PROMPT + NEW)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from harness.merged_policy import MergedPolicy

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(str(resolve_policy(args.policy)), dtype=torch.float32)
    policy = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    model = MergedPolicy(policy, torch.float32).sync()
    ids = torch.randint(100, 49_000, (ROWS, PROMPT), generator=torch.Generator().manual_seed(0))
    _sample(model, ids, True, 0)  # warm-up: allocator, lazy init
    runs: dict[str, list[float]] = {"torch.multinomial": [], "inverse CDF (the harness)": []}
    for r in range(args.repeats):
        for name, fast in (("torch.multinomial", False), ("inverse CDF (the harness)", True)):
            runs[name].append(_sample(model, ids, fast, seed=r))
            print(f"  {name}, repeat {r + 1}: {runs[name][-1]:.2f} s", flush=True)
    lines = [f"SmolLM2 merged sampler, {ROWS} rows x {NEW} tokens at temperature 1, {torch.get_num_threads()} "
             f"threads, {args.repeats} alternated repeats", "",
             "| draw | s per generation (each repeat) | median |", "|---|---|---|"]
    for name, walls in runs.items():
        lines.append(f"| {name} | {', '.join(f'{w:.2f}' for w in walls)} | {statistics.median(walls):.2f} |")
    old, new = (statistics.median(walls) for walls in runs.values())
    lines += ["", f"RATIO inverse CDF / torch.multinomial (median s per generation) = {new / old:.3f}"]
    print("\n".join(lines))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out.with_suffix(".md"), "\n".join(lines) + "\n")
        atomic_write_text(args.out, json.dumps({"ratio": round(new / old, 4), "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
