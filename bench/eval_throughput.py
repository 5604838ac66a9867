"""Sealed-evaluator throughput on CPU: batch order and batch size, against the evaluator's old path (issue #43).

The math evaluator decodes greedily in batches (`meta_agent.inference.chat_generate`). Two things decide
its speed on a CPU: how many sequences share one pass over the weights (batch size), and how much of
each batch is padding (prompts of different lengths padded to the longest). This runs, side by side in
one process on the same prompts and the same model:

  given/B      prompts batched in the evaluator's order, B per batch (16 is MathSettings' default)
  length/B     prompts batched longest first (and answers put back in order), B per batch

and prints prompts per second, the ratio to the old path, and how many greedy answers differ from the
given/16 arm's (padding can flip a near-tie; 0 means an arm answers exactly as the evaluator does today). Each arm runs
--repeats times, interleaved, and its best time is kept (the machine may be shared).

Prompts are the math domain's *train* tasks with the evaluator's system prompt (never a sealed split);
the model is SmolLM2-135M-Instruct (fp32, as `load_for_inference` loads it), or --tiny for the random
test policy (a smoke run of this script).

    python bench/eval_throughput.py                      # SmolLM2, 64 prompts, batches 16 32 64
    python bench/eval_throughput.py --tiny --prompts 16  # seconds; checks the script
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.domains.math import EVAL_SYSTEM, MathDomain, MathSettings  # noqa: E402
from meta_agent.inference import greedy_chat  # noqa: E402
from meta_agent.policy import load_for_inference, smollm2_policy, tiny_policy  # noqa: E402

MAX_NEW_TOKENS = MathSettings().eval_max_new_tokens
OLD_BATCH = MathSettings().eval_batch_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--batches", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="the random test policy instead of SmolLM2")
    ap.add_argument("--out", type=Path, help="also write the table as JSON here")
    args = ap.parse_args()

    import torch

    policy = tiny_policy() if args.tiny else smollm2_policy()
    model, tok = load_for_inference(policy)
    model.eval()
    tasks = MathDomain(MathSettings(train_size=max(args.prompts, 1))).tasks("train")[: args.prompts]
    convs = [[{"role": "system", "content": EVAL_SYSTEM}, {"role": "user", "content": t.prompt}] for t in tasks]
    arms = [("given", OLD_BATCH)] + [(o, b) for b in args.batches for o in ("given", "length")
                                     if (o, b) != ("given", OLD_BATCH)]
    longest = sorted(range(len(convs)), key=lambda i: -len(tok.apply_chat_template(convs[i], tokenize=False)))
    print(f"{'tiny policy' if args.tiny else 'SmolLM2-135M'} fp32, {len(convs)} train prompts, "
          f"{MAX_NEW_TOKENS} new tokens, torch threads {torch.get_num_threads()}", flush=True)
    greedy_chat(model, tok, convs[:4], max_new_tokens=4, batch_size=4)  # warm-up
    best: dict[tuple[str, int], float] = {}
    answers: dict[tuple[str, int], list[str]] = {}
    for rep in range(args.repeats):
        for order, batch in arms:
            start = time.perf_counter()
            perm = longest if order == "length" else list(range(len(convs)))
            shuffled = greedy_chat(model, tok, [convs[i] for i in perm], max_new_tokens=MAX_NEW_TOKENS,
                                   batch_size=batch)
            took = time.perf_counter() - start
            out = [""] * len(convs)
            for position, i in enumerate(perm):
                out[i] = shuffled[position]
            best[(order, batch)] = min(took, best.get((order, batch), float("inf")))
            answers[(order, batch)] = out
            print(f"  repeat {rep + 1}: {order}/{batch}: {took:.1f} s", flush=True)
    old = best[arms[0]]
    rows = []
    print(f"\n| arm | prompts/s | vs {arms[0][0]}/{arms[0][1]} | answers differing |\n|---|---|---|---|")
    for arm in arms:
        differ = sum(a != b for a, b in zip(answers[arm], answers[arms[0]], strict=True))
        rows.append({"order": arm[0], "batch": arm[1], "seconds": best[arm], "prompts_per_s": len(convs) / best[arm],
                     "ratio": old / best[arm], "answers_differing": differ})
        rate = len(convs) / best[arm]
        print(f"| {arm[0]}/{arm[1]} | {rate:.2f} | {old / best[arm]:.2f}x | {differ} of {len(convs)} |")
    if args.out:
        args.out.write_text(json.dumps({"model": "tiny" if args.tiny else "smollm2-135m", "prompts": len(convs),
                                        "max_new_tokens": MAX_NEW_TOKENS, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
