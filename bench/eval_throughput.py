"""Sealed-evaluator throughput on CPU: packed greedy decoding against the evaluator's old path (issue #43).

The math evaluator decodes greedily in batches. Its old path was `model.generate` on left-padded batches
of 16 (`meta_agent.inference.chat_generate`, kept for this comparison); the new one is
`meta_agent.greedy_decode.packed_greedy` (what `greedy_chat` runs now): prompts encoded in groups of
similar length instead of padded to the batch's longest, rows leaving the batch as their answers end.
This runs, side by side in one process on the same prompts and the same model:

  plain/16     the old path: `generate`, 16 prompts a batch (the evaluator's old default on a CPU), `F.linear`
  packed/B     the new path, B prompts a batch, linear layers on weights packed for oneDNN
               (meta_agent/decode_linear.py)
  packed-weight-first/64  the packed path with a decode step's products weight-first and a prefill's by
               `F.linear` (the evaluator before oneDNN packing, and where torch lacks oneDNN)
  packed-F.linear/64  the packed path with torch's own `F.linear` (the evaluator before decode_linear)
  packed-bf16  (--bf16) the new path on a bf16 copy of the weights, the default batch: not what the
               evaluator does (its answers differ), printed to show what precision would buy

and prints prompts per second, the ratio to plain/16, and how many greedy answers differ from plain/16's
(0 means an arm answers exactly as the evaluator did). Each arm runs --repeats times, interleaved, and its
best time is kept (the machine may be shared).

Prompts are the math domain's *train* tasks with the evaluator's system prompt (never a sealed split),
100 by default, the size of a sealed split; the model is SmolLM2-135M-Instruct (fp32, as
`load_for_inference` loads it), or --tiny for the random test policy (a smoke run of this script).

    python bench/eval_throughput.py                      # SmolLM2, 100 prompts, packed batches 16 32 64 100
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

from meta_agent import decode_linear  # noqa: E402
from meta_agent.domains.math import EVAL_SYSTEM, MathDomain, MathSettings, answers_match, extract_answer  # noqa: E402
from meta_agent.inference import chat_generate, greedy_chat  # noqa: E402
from meta_agent.policy import load_for_inference, smollm2_policy, tiny_policy  # noqa: E402

MAX_NEW_TOKENS = MathSettings().eval_max_new_tokens
OLD_BATCH = 16


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--batches", type=int, nargs="+", default=[16, 32, 64, 100])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="the random test policy instead of SmolLM2")
    ap.add_argument("--bf16", action="store_true", help=(
        "add an arm decoding a bf16 copy of the model (fast where the CPU has AVX512-BF16 or AMX; answers "
        "differ, so the evaluator does not use it: this shows how much and how many)"))
    ap.add_argument("--out", type=Path, help="also write the table as JSON here")
    args = ap.parse_args()

    import torch

    policy = tiny_policy() if args.tiny else smollm2_policy()
    model, tok = load_for_inference(policy)
    model.eval()
    tasks = MathDomain(MathSettings(train_size=max(args.prompts, 1))).tasks("train")[: args.prompts]
    convs = [[{"role": "system", "content": EVAL_SYSTEM}, {"role": "user", "content": t.prompt}] for t in tasks]
    arms = [("plain", OLD_BATCH)] + [("packed", b) for b in args.batches]
    arms.append(("packed-weight-first", MathSettings().eval_batch_size))
    arms.append(("packed-F.linear", MathSettings().eval_batch_size))
    onednn = decode_linear._onednn
    half = None
    if args.bf16:
        import copy

        half = copy.deepcopy(model).to(torch.bfloat16)
        arms.append(("packed-bf16", MathSettings().eval_batch_size))
    print(f"{'tiny policy' if args.tiny else 'SmolLM2-135M'} fp32, {len(convs)} train prompts, "
          f"{MAX_NEW_TOKENS} new tokens, torch threads {torch.get_num_threads()}", flush=True)
    greedy_chat(model, tok, convs[:4], max_new_tokens=4, batch_size=4)  # warm-up
    if half is not None:
        greedy_chat(half, tok, convs[:4], max_new_tokens=4, batch_size=4)
    chat_generate(model, tok, convs[:4], max_new_tokens=4, batch_size=4)
    best: dict[tuple[str, int], float] = {}
    answers: dict[tuple[str, int], list[str]] = {}
    for rep in range(args.repeats):
        for path, batch in arms:
            decode_linear.uninstall(model)
            decode_linear._onednn = (lambda: False) if path == "packed-weight-first" else onednn
            if path not in ("plain", "packed-F.linear"):
                decode_linear.install(model)
            start = time.perf_counter()
            if path == "plain":
                out = [t[0] for t in chat_generate(model, tok, convs, max_new_tokens=MAX_NEW_TOKENS, batch_size=batch)]
            else:
                out = greedy_chat(half if path.endswith("bf16") else model, tok, convs,
                                  max_new_tokens=MAX_NEW_TOKENS, batch_size=batch)
            took = time.perf_counter() - start
            best[(path, batch)] = min(took, best.get((path, batch), float("inf")))
            answers[(path, batch)] = out
            print(f"  repeat {rep + 1}: {path}/{batch}: {took:.1f} s", flush=True)
    old = best[arms[0]]
    rows = []
    print(f"\n| arm | prompts/s | vs {arms[0][0]}/{arms[0][1]} | answers differing | correct |\n|---|---|---|---|---|")
    for arm in arms:
        differ = sum(a != b for a, b in zip(answers[arm], answers[arms[0]], strict=True))
        correct = sum(answers_match(extract_answer(a), t.answer) for a, t in zip(answers[arm], tasks, strict=True))
        rows.append({"path": arm[0], "batch": arm[1], "seconds": best[arm], "prompts_per_s": len(convs) / best[arm],
                     "ratio": old / best[arm], "answers_differing": differ,
                     "correct": correct})
        rate = len(convs) / best[arm]
        print(f"| {arm[0]}/{arm[1]} | {rate:.2f} | {old / best[arm]:.2f}x | {differ} of {len(convs)} | {correct} |")
    default = ("packed", MathSettings().eval_batch_size)
    if default in best:
        print(f"RATIO the evaluator's default (packed/{default[1]}) vs the old one (plain/{OLD_BATCH}): "
              f"{old / best[default]:.2f}x")
    if args.out:
        args.out.write_text(json.dumps({"model": "tiny" if args.tiny else "smollm2-135m", "prompts": len(convs),
                                        "max_new_tokens": MAX_NEW_TOKENS, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
