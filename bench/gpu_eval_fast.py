"""The sealed evaluator's own generation (meta_agent.inference.greedy_chat) on one GPU: today's path against
its fast path, side by side in one run (issue #43: 3x the evaluation throughput at identical answers).

Arms, each on the same 64 evaluation prompts (the math evaluator's system prompt, train-split questions),
fp32 as `load_for_inference` loads a policy, greedy, `MathSettings.eval_max_new_tokens` new tokens:

  plain/16    the dynamic KV cache, 16 prompts a batch: what the evaluator ran before the fast path
  fast/16     the static KV cache (what greedy_chat now uses on a CUDA device), 16 a batch (the default)
  plain/64    the dynamic cache, 64 a batch
  fast/64     the static cache, 64 a batch (`eval_batch_size: 64` in a domain's config)

Each arm runs once to warm up (the static cache's first call allocates it) and then --repeats times; the
best time is kept. Answers are compared with plain/16's, text for text.

The model is SmolLM2-135M's architecture with random weights (the real weights cannot travel to the device
machine): its answers are noise, and its near-uniform logits make argmax ties, hence differences between
arms, likelier than a trained model's.

    python bench/gpu_eval_fast.py --out DIR           # on a CUDA machine (about a minute)
    python bench/gpu_eval_fast.py --smoke --out DIR   # tiny model, on the CPU: checks the script
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import gpu_path as gp  # noqa: E402

from meta_agent.inference import greedy_chat  # noqa: E402

MAX_NEW_TOKENS = 48  # MathSettings().eval_max_new_tokens (not imported: the device machine lacks math-verify)
ARMS = (("plain", 16), ("fast", 16), ("plain", 64), ("fast", 64))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tok", type=Path, default=ROOT / ".gpu" / "tok")
    ap.add_argument("--prompts", type=Path, default=ROOT / ".gpu" / "prompts.json")
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not a.smoke:
        print(f"{Path(__file__).name}: no CUDA GPU here, nothing measured (--smoke runs it tiny on the CPU)")
        return
    from transformers import AutoModelForCausalLM

    tok, prompts = gp.load_inputs(a.tok, a.prompts)
    convs = prompts["eval"][: 8 if a.smoke else 64]
    with tempfile.TemporaryDirectory() as d:
        gp.save_random_model(Path(d), a.smoke)
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).to(device).eval()
    tok.padding_side = "left"
    best: dict[tuple[str, int], float] = {}
    answers: dict[tuple[str, int], list[str]] = {}
    for rep in range(a.repeats + 1):  # round 0 warms every arm up
        for path, batch in ARMS:
            gp.sync(device)
            start = time.perf_counter()
            out = greedy_chat(model, tok, convs, max_new_tokens=MAX_NEW_TOKENS, batch_size=batch,
                              static_cache=path == "fast")
            gp.sync(device)
            took = time.perf_counter() - start
            answers[(path, batch)] = out
            if rep:
                best[(path, batch)] = min(took, best.get((path, batch), float("inf")))
            gp.log(f"round {rep}: {path}/{batch}: {took:.2f} s")
    today = best[ARMS[0]]
    rows = []
    for arm in ARMS:
        rows.append({"arm": f"{arm[0]}/{arm[1]}", "prompts_per_s": len(convs) / best[arm], "x_today": today / best[arm],
                     "differ_from_today": sum(x != y for x, y in zip(answers[arm], answers[ARMS[0]], strict=True)),
                     "differ_from_plain_same_batch": sum(x != y for x, y in zip(
                         answers[arm], answers[("plain", arm[1])], strict=True))})
    head = (f"Device: {torch.cuda.get_device_name(0) if device == 'cuda' else 'CPU (smoke)'}; torch {torch.__version__}"
            f"; {len(convs)} prompts, {MAX_NEW_TOKENS} new tokens, fp32, greedy; best of {a.repeats}")
    table = ["| arm | prompts/s | x today (plain/16) | answers differing from today | from plain at the same batch |",
             "|---|---|---|---|---|"] + [
        f"| {r['arm']} | {r['prompts_per_s']:.1f} | {r['x_today']:.2f} | {r['differ_from_today']} of {len(convs)} | "
        f"{r['differ_from_plain_same_batch']} |" for r in rows]
    text = "\n".join(["# Sealed evaluator on one GPU: greedy_chat, plain vs fast (bench/gpu_eval_fast.py)", "",
                      head, "", *table, ""])
    print(text)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "eval_fast.md").write_text(text)
        (a.out / "eval_fast.json").write_text(json.dumps({"head": head, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
