"""What the sealed SWE protocol costs and what a policy does in it, old protocol against new (issue #45).

Runs the sealed evaluator's episodes, side by side in one process on the same instances, under each
protocol given (turns x tokens per turn), for the policy and for the scripted competent agent that
knows each fix (meta_agent/swe/competent.py), and prints per protocol and actor:

  s/instance     wall seconds per instance (generation, commands in the sandbox, the sealed test run)
  ran a command  episodes in which at least one reply held a command the scaffold could parse
  left a diff    episodes that ended with a change to the repository
  right file     episodes whose diff touches the file the gold patch changes
  resolved       episodes whose diff the sealed tests accept

    python bench/swe_protocol.py --taskset default --split selection --limit 8
    python bench/swe_protocol.py --taskset calc-e2e --split test --policy tiny    # seconds; checks the script

Instances come from a sealed split of the task set, as the evaluator's do; only counts and times are
printed (no statement, diff or transcript).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.domains.settings import ScaffoldSettings, SweSettings  # noqa: E402
from meta_agent.domains.swe import SweDomain  # noqa: E402
from meta_agent.domains.swe_scaffold import greedy_replier  # noqa: E402
from meta_agent.policy import load_for_inference, resolve_policy, smollm2_tokenizer  # noqa: E402
from meta_agent.swe.competent import CompetentAgent, patch_edits  # noqa: E402


def _protocol(spec: str) -> ScaffoldSettings:
    turns, _, tokens = spec.partition("x")
    return ScaffoldSettings(max_turns=int(turns), turn_tokens=int(tokens))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--taskset", default="default")
    ap.add_argument("--split", default="selection", choices=["selection", "test"])
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--protocols", nargs="+", default=["3x48", f"{ScaffoldSettings().max_turns}x"
                                                               f"{ScaffoldSettings().turn_tokens}"],
                    help="TURNSxTOKENS; the first is the old protocol, the ratio's base")
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--out", type=Path, help="also write the table as JSON here")
    args = ap.parse_args()

    model, tok = load_for_inference(resolve_policy(args.policy))
    rows = []
    for spec in args.protocols:
        domain = SweDomain(SweSettings(taskset=args.taskset, sandbox=args.sandbox, scaffold=_protocol(spec),
                                       selection_size=args.limit, test_size=args.limit))
        instances = domain.instances(args.split)
        gold = {i.instance_id: {e.path for e in patch_edits(i.patch)} for i in instances}
        for actor, reply in (("policy", greedy_replier(model, tok)),
                             ("competent agent", CompetentAgent(instances, smollm2_tokenizer()))):
            start = time.perf_counter()
            result = domain.score(reply, instances, args.split, actor)
            took = time.perf_counter() - start
            n = len(result.results)
            ran = sum(1 for r in result.results if "\nexit code " in r.completion)
            diffs = [r for r in result.results if (r.answer or "").strip()]
            right = sum(1 for r in diffs if any(f"a/{f}" in (r.answer or "") for f in gold[r.task_id]))
            resolved = sum(1 for r in result.results if r.correct)
            rows.append({"protocol": spec, "actor": actor, "instances": n, "seconds_per_instance": took / max(n, 1),
                         "ran_a_command": ran, "left_a_diff": len(diffs), "right_file": right, "resolved": resolved})
            print(f"{spec} {actor}: {took / max(n, 1):.1f} s/instance, ran a command {ran}/{n}, diff {len(diffs)}, "
                  f"right file {right}, resolved {resolved}", flush=True)
    base = next(r["seconds_per_instance"] for r in rows if r["actor"] == "policy")
    print(f"\n{args.policy} on {args.taskset}/{args.split}, {rows[0]['instances']} instances\n")
    print("| protocol | actor | s/instance | vs old (policy) | ran a command | left a diff | right file | resolved |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['protocol']} | {r['actor']} | {r['seconds_per_instance']:.1f} | "
              f"{r['seconds_per_instance'] / base:.2f}x | {r['ran_a_command']} | {r['left_a_diff']} | "
              f"{r['right_file']} | {r['resolved']} |")
    if args.out:
        args.out.write_text(json.dumps({"policy": args.policy, "taskset": args.taskset, "split": args.split,
                                        "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
