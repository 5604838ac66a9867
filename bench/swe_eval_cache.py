"""The sealed SWE evaluation's episodes with each conversation's KV cache kept across turns
(meta_agent/multiturn.py, what `SweDomain.evaluate` uses) against re-encoding every turn
(`swe_scaffold.greedy_replier`), side by side in one process on the same instances and policy.

Prints the wall time of each, the ratio (re-encoding ÷ cached; target ≥ 1.3 on 2 CPU cores), the share of
prompt tokens the cache supplied, and how many episodes' transcripts came out identical (every reply,
every observation). A transcript can differ on a greedy near-tie (the matmuls see other shapes, as
between two batch compositions); the count says how often it did.

    python bench/swe_eval_cache.py --limit 8                  # SmolLM2, default set, selection split
    python bench/swe_eval_cache.py --policy tiny --taskset calc-e2e --split test --limit 2   # seconds

A third arm keeps the cache but lets transformers' DynamicCache concatenate it per token (what this path
did before the cache grew in place, meta_agent/multiturn.py): the ratio of the two is the growing cache's.

Only counts and times are printed (no statement, diff or transcript of a sealed split).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.domains.settings import SweSettings  # noqa: E402
from meta_agent.domains.swe import SweDomain  # noqa: E402
from meta_agent.domains.swe_scaffold import greedy_replier, run_episodes  # noqa: E402
from meta_agent.multiturn import MultiTurnGreedy  # noqa: E402
from meta_agent.policy import load_for_inference, resolve_policy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--taskset", default="default")
    ap.add_argument("--split", default="selection", choices=["selection", "test"])
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--out", type=Path, help="also write the numbers as JSON here")
    args = ap.parse_args()

    domain = SweDomain(SweSettings(taskset=args.taskset, sandbox=args.sandbox, selection_size=args.limit,
                                   test_size=args.limit))
    instances = domain.instances(args.split)[: args.limit]
    model, tok = load_for_inference(resolve_policy(args.policy))
    cached = MultiTurnGreedy(model, tok)
    arms = (("cached", cached), ("cached, concatenating", MultiTurnGreedy(model, tok, growing=False)),
            ("re-encoded", greedy_replier(model, tok)))
    seconds, transcripts = {}, {}
    for name, reply in arms:
        start = time.perf_counter()
        episodes = run_episodes(reply, instances, domain.sandbox, domain.settings.scaffold)
        seconds[name] = time.perf_counter() - start
        transcripts[name] = [transcript for _, transcript, _, _ in episodes]
        print(f"{name}: {seconds[name]:.1f} s for {len(instances)} episodes", flush=True)

    def same(other: str) -> int:
        return sum(a == b for a, b in zip(transcripts["cached"], transcripts[other], strict=True))

    result = {
        "policy": args.policy, "taskset": args.taskset, "split": args.split, "episodes": len(instances),
        "scaffold": domain.settings.scaffold.model_dump(), "seconds_cached": seconds["cached"],
        "seconds_cached_concatenating": seconds["cached, concatenating"],
        "seconds_re_encoded": seconds["re-encoded"], "ratio": seconds["re-encoded"] / seconds["cached"],
        "ratio_growing": seconds["cached, concatenating"] / seconds["cached"],
        "prompt_tokens": cached.prompt_tokens, "reused_tokens": cached.reused_tokens,
        "identical_transcripts": same("re-encoded"), "identical_to_concatenating": same("cached, concatenating"),
    }
    print(f"\nre-encoded ÷ cached: {result['ratio']:.2f} (target >= 1.3); prompt tokens from the cache "
          f"{cached.reused_tokens}/{cached.prompt_tokens} ({cached.reused_tokens / max(cached.prompt_tokens, 1):.0%}); "
          f"identical transcripts {result['identical_transcripts']}/{len(instances)}")
    print(f"concatenating cache ÷ growing cache: {result['ratio_growing']:.2f}; identical transcripts "
          f"{result['identical_to_concatenating']}/{len(instances)}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
