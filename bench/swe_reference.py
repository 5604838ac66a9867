"""Does the reference SWE harness resolve anything on the sealed easy test split? Scored once, with the template.

The efficacy benchmark's SWE rows (`bench/efficacy.py --domain swe`) take many hours a seed on 2 cores. Its
first question is cheaper: does the reference harness (bench/efficacy_lib/reference.py, set up as DeepSWE,
SkyRL-v0 and SWE-Gym set up agentic RL) resolve any sealed easy test instance at all? This trains, from the
same initial policy and seed, the two harnesses the benchmark's `reference_rollout` and `template` arms train,
for the steps its `--preset cpu` evolved policy gets (2 generations x 4), and scores each once on every easy
test instance of the shipped default set under the sealed protocol:

  reference   the reference SWE harness (6 turns of 128 tokens, the LoRA learning rate, clip-higher, ...)
  template    the template harness (3 turns of 48 tokens in training)

It reports each arm's resolved rate with an exact (Clopper-Pearson) 95% interval, how far its test episodes
got (ran a command the scaffold accepted, left a diff, touched the file the fix is in: read here, on the
trusted side), and reference - template paired per instance (bootstrap CI, exact McNemar).

    python bench/swe_reference.py                       # SmolLM2, 8 steps, all 56 easy test instances
    python bench/swe_reference.py --steps 16 --out runs/swe-reference-16

A re-run with the same --out keeps arms whose test result is saved (a killed arm starts over). Settings are
chosen on the selection split or in other benchmarks; this scores the test split, so run it once per choice.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from math import comb
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.efficacy import arm_settings, preset_for  # noqa: E402
from bench.efficacy_lib.commands import run_meta_agent, stop_on_sigterm, write_table  # noqa: E402
from bench.efficacy_lib.reference import make_reference_harness  # noqa: E402
from meta_agent.domains.base import EvalResult  # noqa: E402
from meta_agent.domains.swe import patched_files  # noqa: E402
from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.gitops import init_harness  # noqa: E402
from meta_agent.stats import mcnemar_exact, paired_bootstrap_ci  # noqa: E402
from meta_agent.swe.defaults import DEFAULT_TASKSET  # noqa: E402
from meta_agent.swe.taskset import load_tasks  # noqa: E402

ARMS = ("reference", "template")
NO_COMMAND = "No command found"
"""The scaffold's observation for a reply it could not parse as a command (meta_agent/domains/swe_scaffold.py)."""


def exact_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a binomial rate, by bisection on the binomial CDF (no scipy here)."""
    tail = (1 - level) / 2

    def cdf(j: int, p: float) -> float:
        return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(j + 1))

    def upper(j: int) -> float:  # the p at which P(X <= j) falls to `tail`
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if cdf(j, mid) > tail else (lo, mid)
        return lo

    return (0.0 if k == 0 else 1 - upper(n - k)), (1.0 if k == n else upper(k))


def _row(arm: str, result: EvalResult, gold: dict[str, set[str]]) -> dict[str, Any]:
    rows = result.results
    resolved = sum(r.score > 0 for r in rows)
    return {"arm": arm, "tasks": len(rows), "resolved": resolved, "ci": exact_interval(resolved, len(rows)),
            "ran_command": sum(r.completion.count("[observation]") > r.completion.count(NO_COMMAND) for r in rows),
            "with_diff": result.answered(),
            "gold_file": sum(bool(set(patched_files(r.answer)) & gold.get(r.task_id, set())) for r in rows),
            "eval_s": round(result.wall_time, 1)}


def _arm(out: Path, arm: str, steps: int, seed: int, test: int) -> EvalResult:
    result = out / "results" / f"{arm}.json"
    if not result.is_file():
        harness = out / f"{arm}-harness"
        if not (harness / ".git").is_dir():
            shutil.rmtree(harness, ignore_errors=True)
            if arm == "reference":
                make_reference_harness(harness, "swe")
            else:
                init_harness(harness, "swe")
        run = out / arm
        shutil.rmtree(run, ignore_errors=True)  # a killed training starts over, as `rollout` itself would

        def meta_agent(*args: str) -> None:
            print(f"{arm}: meta-agent {' '.join(args)}", flush=True)
            run_meta_agent(*args, data=out / "data", who=f"swe reference ({arm})")

        meta_agent("rollout", "--config", str(out / "run.yaml"), "--steps", str(steps), "--seed", str(seed),
                   "--run-dir", str(run), "--harness", str(harness))
        result.parent.mkdir(parents=True, exist_ok=True)
        meta_agent("eval", "--config", str(out / "run.yaml"), "--domain", "swe", "--policy",
                   str(run / "train" / "checkpoint"), "--split", "test", "--limit", str(test), "--out", str(result),
                   "--show", "0")
    return EvalResult.model_validate_json(result.read_text())


def _table(rows: list[dict[str, Any]], paired: dict[str, Any] | None, steps: int) -> str:
    lines = [f"| arm ({steps} GRPO steps) | resolved | rate, exact 95% CI | ran a command | left a diff | "
             "touched the fix's file | test evaluation |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['arm']} | {r['resolved']} of {r['tasks']} | {r['resolved'] / r['tasks']:.3f} "
                     f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] | {r['ran_command']} | {r['with_diff']} | "
                     f"{r['gold_file']} | {r['eval_s'] / 60:.1f} min |")
    if paired:
        lines += ["", f"reference - template, paired per instance: {paired['delta']}, McNemar {paired['mcnemar']}"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    search = preset_for("cpu", "swe")
    ap.add_argument("--steps", type=int, default=search["generations"] * search["train_steps"],
                    help="GRPO steps of each arm (default: what the efficacy benchmark's cpu evolved policy trains)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--out", type=Path, default=Path("runs") / "swe-reference")
    args = ap.parse_args()
    stop_on_sigterm()  # a stopped benchmark stops the run it started
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    run_config, _ = arm_settings("cpu", args.sandbox, domain="swe")
    if not (out / "run.yaml").is_file():
        atomic_write_text(out / "run.yaml", yaml.safe_dump(run_config))
    test = int(search["test_limit"])
    results = {arm: _arm(out, arm, args.steps, args.seed, test) for arm in ARMS}
    gold = {i.instance_id: set(patched_files(i.patch)) for i in load_tasks("test", DEFAULT_TASKSET)}
    rows = [_row(arm, r, gold) for arm, r in results.items()]
    ids = [r.task_id for r in results["reference"].results]
    a, b = ([results[arm].per_task()[i] for i in ids] for arm in ARMS)
    paired = {"delta": str(paired_bootstrap_ci(a, b)), "mcnemar": str(mcnemar_exact(a, b))}
    write_table(out, [*rows, {"reference - template": paired}], _table(rows, paired, args.steps))


if __name__ == "__main__":
    main()
