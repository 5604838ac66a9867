"""Decode steps with linear layers on oneDNN-packed weights, or weight-first, ÷ torch's `F.linear` (issue #43).

A decode step multiplies one row per sequence by every weight of the model. `meta_agent/decode_linear.py`
(and the harness's copy for its sampler) computes those products on weights packed once for oneDNN where
torch has it, else as `(W @ x.T).T` instead of `F.linear(x, W)`; this measures what each buys, side by side
in one process, on SmolLM2-135M in fp32 (as the evaluator and the CPU sampler hold it):

  kernel   --rows rows (4 by default; 8 is the math sampler's, 64 the evaluator's batch) through every
           linear weight of the model (30 layers x 7, and the LM head), cold from memory: ms and GB/s of
           weights read, each form
  decode   greedy decode steps of --rows sequences after a --prompt-token prompt (600: a SWE turn's shape),
           ms a token, and whether each form chose the same tokens as `F.linear`

Arms alternate, --repeats times each, and the best time is kept (the machine may be shared). The ratios
printed are each form ÷ F.linear: below 1 is faster.

    python bench/decode_linear.py            # SmolLM2
    python bench/decode_linear.py --tiny     # the random test policy: checks the script in seconds
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent import decode_linear  # noqa: E402
from meta_agent.policy import load_for_inference, smollm2_policy, tiny_policy  # noqa: E402

FORMS = ("F.linear", "weight-first", "onednn")


def _kernel(model: object, repeats: int, rows: int) -> dict[str, float]:
    import torch
    from torch import nn

    weights = [m.weight for m in model.modules() if type(m) is nn.Linear]  # type: ignore[attr-defined]
    xs = {w.shape[1]: torch.randn(rows, w.shape[1]) for w in weights}
    forms = {"F.linear": lambda x, w, _: nn.functional.linear(x, w),
             "weight-first": lambda x, w, _: (w @ x.t()).t().contiguous()}
    packed: list[object] = [None] * len(weights)
    if decode_linear._onednn():
        packed = [torch.ops.mkldnn._reorder_linear_weight(w.detach(), decode_linear.PACK_HINT) for w in weights]
        forms["onednn"] = lambda x, _, p: torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], "")
    best = {name: float("inf") for name in forms}
    with torch.no_grad():
        for _ in range(repeats):
            for name, form in forms.items():
                start = time.perf_counter()
                for w, p in zip(weights, packed, strict=True):
                    form(xs[w.shape[1]], w, p)
                best[name] = min(best[name], time.perf_counter() - start)
    return best


def _decode(model: object, prompt: int, tokens: int, rows: int) -> tuple[float, list[list[int]]]:
    import torch

    vocab = model.config.vocab_size  # type: ignore[attr-defined]
    ids = torch.randint(100, min(20000, vocab), (rows, prompt), generator=torch.Generator().manual_seed(0))
    chosen = []
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)  # type: ignore[operator]
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        start = 0.0
        for i in range(tokens + 2):
            if i == 2:  # the first steps warm the allocator
                start = time.perf_counter()
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)  # type: ignore[operator]
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
            chosen.append(nxt[:, 0].tolist())
    return (time.perf_counter() - start) / tokens, chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="the random test policy instead of SmolLM2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=600, help="prompt tokens before the decode steps")
    ap.add_argument("--tokens", type=int, default=32, help="decode steps timed")
    ap.add_argument("--rows", type=int, default=4, help="sequences decoded at once")
    args = ap.parse_args()

    import torch

    model, _ = load_for_inference(tiny_policy() if args.tiny else smollm2_policy())
    gb = sum(m.weight.numel() * 4 for m in model.modules() if type(m) is torch.nn.Linear) / 1e9
    print(f"{'tiny policy' if args.tiny else 'SmolLM2-135M'} fp32, {args.rows} rows, torch threads "
          f"{torch.get_num_threads()}, {gb:.2f} GB of linear weights", flush=True)
    kernel = _kernel(model, args.repeats, args.rows)
    for name, took in kernel.items():
        print(f"  kernel {name:12s} {took * 1e3:7.1f} ms  {gb / took:5.1f} GB/s")
    onednn = decode_linear._onednn
    best = {name: float("inf") for name in FORMS if name in kernel}
    tokens: dict[str, list[list[int]]] = {}
    for rep in range(args.repeats):
        for name in best:
            decode_linear.uninstall(model)
            decode_linear._onednn = (lambda: False) if name == "weight-first" else onednn
            if name != "F.linear":
                decode_linear.install(model)
            took, tokens[name] = _decode(model, args.prompt, args.tokens, args.rows)
            best[name] = min(best[name], took)
            print(f"  repeat {rep + 1}: decode {name}: {took * 1e3:.1f} ms a token", flush=True)
    decode_linear._onednn = onednn
    for name in list(best)[1:]:
        same = tokens["F.linear"] == tokens[name]
        print(f"RATIO kernel {name} ÷ F.linear: {kernel[name] / kernel['F.linear']:.3f}")
        print(f"RATIO decode step {name} ÷ F.linear: {best[name] / best['F.linear']:.3f} "
              f"({best[name] * 1e3:.1f} vs {best['F.linear'] * 1e3:.1f} ms a token; "
              f"greedy tokens {'identical' if same else 'DIFFERENT'})")


if __name__ == "__main__":
    main()
