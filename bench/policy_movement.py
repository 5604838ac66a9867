"""How many GRPO steps before training changes what the policy answers, per harness setting?

The gate compares a candidate with main by their sealed selection scores after the same training. If
neither run changed any greedy answer of the initial policy, every delta is exactly 0 and no performance
change can pass, whatever it is. This measures, on the selection split, after each run:

  moved       tasks whose greedy completion differs from the initial policy's
  accuracy    selection accuracy
  discordant  tasks that an arm and the first arm score differently at the same step count: the pairs a
              paired delta between them is made of (0 discordant pairs = a delta of exactly 0)

    python bench/policy_movement.py             # SmolLM2: the template, lr 1e-4, lr 1e-4 + one group of 8
    python bench/policy_movement.py --steps 8 16 32 --arms template: lr2e-4:rl.learning_rate=2e-4

An arm is NAME:KEY=VALUE,KEY=VALUE (harness.yaml settings; none = the template harness). Each step count
is its own run from the initial policy with the same seed (a run's checkpoint cannot be the next run's
starting policy: a checkpoint must stand on the model its run started from), so the 8-step run is the
first 8 steps of the 24-step one except for the learning-rate schedule, which decays over the run.
Results (every evaluation's per-task answers, the table) go to --out; a re-run with the same --out keeps
finished runs, and a re-run with another --limit scores the same checkpoints on a selection set of that size
(eval-<limit>.json, table-<limit>.md): evaluating is cheap next to training.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.efficacy_lib.commands import run_meta_agent  # noqa: E402
from meta_agent.domains.base import EvalResult  # noqa: E402
from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.gitops import init_harness  # noqa: E402
from meta_agent.inside.skillkit import set_setting  # noqa: E402


def _meta_agent(out: Path, *args: str) -> None:
    run_meta_agent(*args, data=out / "data", who="policy movement")  # its own sealed splits, not the user's


DEFAULT_LIMIT = 30
"""Selection tasks of the default set; any other --limit is a set of its own, drawn at that size."""
DEFAULT_ARMS = ["template:", "lr1e-4:rl.learning_rate=1e-4",
                "lr1e-4-group8:rl.learning_rate=1e-4,rl.num_generations=8,rl.prompts_per_step=1"]


def _arm(spec: str) -> tuple[str, dict[str, object]]:
    name, _, sets = spec.partition(":")
    if not name or not name.replace("-", "").replace(".", "").isalnum():
        raise SystemExit(f"--arms {spec!r}: give NAME:KEY=VALUE,... with a plain NAME")
    settings: dict[str, object] = {}
    for item in filter(None, sets.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"--arms {spec!r}: {item!r} is not KEY=VALUE")
        settings[key] = yaml.safe_load(value)
    return name, settings


def _harness(out: Path, name: str, settings: dict[str, object]) -> Path:
    path = out / f"harness-{name}"
    if not (path / ".git").is_dir():
        repo = init_harness(path, "math")
        for key, value in settings.items():
            set_setting(path, key, value)
        if settings:
            repo.git.commit("-am", ", ".join(f"{k} {v}" for k, v in settings.items()))
    return path


def _evaluate(out: Path, config: Path, policy: str, target: Path, limit: int) -> EvalResult:
    if not target.is_file():
        _meta_agent(out, "eval", "--config", str(config), "--domain", "math", "--policy", policy,
                    "--split", "selection", "--limit", str(limit), "--out", str(target), "--show", "0")
    return EvalResult.model_validate_json(target.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--arms", nargs="+", default=DEFAULT_ARMS, help="NAME:KEY=VALUE,... (harness.yaml settings)")
    ap.add_argument("--steps", type=int, nargs="+", default=[8, 24], help="GRPO steps of each run")
    ap.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="selection tasks evaluated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "policy-movement")
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    config = out / "run.yaml"
    atomic_write_text(config, yaml.safe_dump({"domain": "math", "policy": args.policy,
                                              "math": {"train_size": 200, "selection_size": args.limit,
                                                       "test_size": 60}}))
    # Each --limit is its own selection set (drawn at that size): its evaluations and table are kept apart.
    suffix = "" if args.limit == DEFAULT_LIMIT else f"-{args.limit}"
    base = _evaluate(out, config, args.policy, out / f"eval-step0{suffix}.json", args.limit)
    first = {r.task_id: r.completion for r in base.results}
    arms = [_arm(spec) for spec in args.arms]
    scores: dict[tuple[str, int], dict[str, float]] = {}
    rows: list[tuple[str, int, int, float]] = [("initial", 0, 0, base.score.mean)]
    for name, settings in arms:
        harness = _harness(out, name, settings)
        for steps in args.steps:
            run = out / f"{name}-step{steps}"
            if not (run / "train" / "report.json").is_file():
                if run.exists():
                    shutil.rmtree(run)  # a killed run starts over
                _meta_agent(out, "rollout", "--config", str(config), "--harness", str(harness), "--policy",
                            args.policy, "--steps", str(steps), "--seed", str(args.seed), "--run-dir", str(run))
            result = _evaluate(out, config, str(run / "train" / "checkpoint"), run / f"eval{suffix}.json", args.limit)
            moved = sum(r.completion != first.get(r.task_id) for r in result.results)
            scores[(name, steps)] = result.per_task()
            rows.append((name, steps, moved, result.score.mean))
    first_arm = arms[0][0]
    table = [f"| arm | steps | moved (of {args.limit}) | accuracy | discordant with {first_arm} |",
             "|---|---|---|---|---|"]
    for name, steps, moved, acc in rows:
        pair = ""
        if name not in ("initial", first_arm):
            a, b = scores[(first_arm, steps)], scores[(name, steps)]
            pair = str(sum(a[t] != b.get(t) for t in a))
        table.append(f"| {name} | {steps} | {moved} | {acc:.3f} | {pair} |")
    text = "\n".join(table)
    atomic_write_text(out / f"table{suffix}.md", text + "\n")
    atomic_write_text(out / f"table{suffix}.json", json.dumps(
        [{"arm": r, "steps": s, "moved": m, "accuracy": a} for r, s, m, a in rows], indent=2))
    print(text)


if __name__ == "__main__":
    main()
