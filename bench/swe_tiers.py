"""How often does SmolLM2 resolve an SWE instance under the static harness, per difficulty tier?

GRPO learns only from groups whose episodes score differently: a group of all-unresolved episodes has an
advantage of 0 everywhere and gives no gradient. This measures, on the default task set (`meta-agent tasks
build --default`), from the initial policy and the template harness, for each tier choice:

  rollout   N GRPO steps of the template harness (one task a step, a group of 4 sampled episodes): the
            episodes the sealed verifier resolved (the harness's own reward beside it), and the groups
            with at least one resolved episode (the ones GRPO can learn from)
  test      the sealed evaluator on the test split of those tiers: greedy, one episode a task

    python bench/swe_tiers.py                                  # easy vs all tiers, 12 steps each
    python bench/swe_tiers.py --choices easy medium,hard --steps 24 --test-limit 20

Results (each run's files, test.json per choice, table.md) go to --out; a re-run with the same --out
keeps finished runs and evaluations.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.efficacy_lib.commands import rollout_once, run_meta_agent, stop_on_sigterm, write_table  # noqa: E402
from meta_agent.contract import RolloutRecord, read_jsonl  # noqa: E402
from meta_agent.domains.base import EvalResult  # noqa: E402
from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.swe.difficulty import TIERS  # noqa: E402
from meta_agent.training import VERIFIED  # noqa: E402


def _tiers(choice: str) -> list[str]:
    tiers = list(TIERS) if choice == "all" else [t for t in choice.split(",") if t]
    unknown = [t for t in tiers if t not in TIERS]
    if unknown or not tiers:
        raise SystemExit(f"--choices {choice!r}: give 'all' or tiers from {', '.join(TIERS)} joined by commas")
    return tiers


def _rollout_counts(train_dir: Path) -> dict[str, int]:
    """Episodes; those that ran a command and that left a diff; resolved ones (the sealed verifier, and the
    harness's own reward); groups with a resolved episode."""
    records = read_jsonl(train_dir / VERIFIED, RolloutRecord)
    groups: dict[str, list[RolloutRecord]] = {}
    for r in records:
        groups.setdefault(r.group_id, []).append(r)
    return {"episodes": len(records),
            "ran_command": sum(bool(r.extra.get("commands")) for r in records),
            "with_diff": sum(bool(r.extra.get("diff")) for r in records),
            "verified": sum(bool(r.verified) for r in records),
            "harness_reward": sum(r.rewards.get("resolved", 0.0) > 0 for r in records),
            "groups": len(groups),
            "groups_with_resolved": sum(any(r.verified for r in g) for g in groups.values())}


def _measure(out: Path, choice: str, policy: str, steps: int, seed: int, test_limit: int | None) -> dict:
    label = choice.replace(",", "+")
    here = out / label
    here.mkdir(parents=True, exist_ok=True)
    config = here / "run.yaml"
    swe = {"tiers": _tiers(choice), "test_size": test_limit}
    atomic_write_text(config, yaml.safe_dump({"domain": "swe", "policy": policy, "swe": swe}))

    def meta_agent(*args: str) -> None:
        print(f"{label}: meta-agent {' '.join(args)}", flush=True)
        run_meta_agent(*args, data=out / "data", who="swe tiers")

    run = here / "rollout"
    # Finished = its verified episodes are saved (atomically, after training): they are all this table reads,
    # and all that bench/results keeps of the run (.gitignore), so a clone of the results re-trains nothing.
    rollout_once(run, run / "train" / VERIFIED, lambda: meta_agent(
        "rollout", "--config", str(config), "--domain", "swe", "--policy", policy, "--steps", str(steps),
        "--seed", str(seed), "--run-dir", str(run)))
    test = here / "test.json"
    if not test.is_file():
        meta_agent("eval", "--config", str(config), "--domain", "swe", "--policy", policy, "--split", "test",
                   "--out", str(test), "--show", "0")
    result = EvalResult.model_validate_json(test.read_text())
    return {"tiers": label, **_rollout_counts(run / "train"), "test_tasks": len(result.results),
            "test_resolved": sum(r.score > 0 for r in result.results), "test_rate": result.score.mean,
            "test_ci": [result.score.low, result.score.high]}


def _table(rows: list[dict], steps: int) -> str:
    lines = [f"| tiers | episodes ({steps} steps) | ran a command | left a diff | resolved (sealed) | harness reward 1 "
             "| groups with a resolved episode | test resolved (greedy) | test rate, 95% CI |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['tiers']} | {r['episodes']} | {r['ran_command']} | {r['with_diff']} | {r['verified']} | "
                     f"{r['harness_reward']} | "
                     f"{r['groups_with_resolved']} of {r['groups']} | {r['test_resolved']} of {r['test_tasks']} | "
                     f"{r['test_rate']:.3f} [{r['test_ci'][0]:.3f}, {r['test_ci'][1]:.3f}] |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--choices", nargs="+", default=["easy", "all"],
                    help="tier choices to compare: 'all' or tiers joined by commas (default: easy all)")
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--steps", type=int, default=12, help="GRPO steps of each rollout (one task a step)")
    ap.add_argument("--test-limit", type=int, default=None,
                    help="test instances evaluated per choice (default: every test instance of its tiers)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "swe-tiers")
    args = ap.parse_args()
    stop_on_sigterm()  # a stopped benchmark stops the run it started (resumable: finished arms are kept)
    out = args.out.resolve()
    rows = [_measure(out, choice, args.policy, args.steps, args.seed, args.test_limit) for choice in args.choices]
    text = _table(rows, args.steps)
    write_table(out, rows, text)


if __name__ == "__main__":
    main()
