"""A SWE GRPO step with each episode's KV cache kept from turn to turn ÷ re-encoding every turn
(harness/swe/turn_cache.py, `domain_settings.turn_cache`).

Two harnesses from `meta-agent init --domain swe`, identical but for `turn_cache: false` in one, each train
SmolLM2 `--steps` GRPO steps through `meta-agent rollout` (sandboxed, the default task set's train split,
the template's 3 turns of 48 tokens unless --turns/--turn-tokens say otherwise), alternating, `--repeats`
times, the same seed per pair. A step's time is TRL's own per-step wall time from the run's metrics; the
first step (start-up, first-touch allocation) is left out of the mean. Both arms sample the same episodes up
to float rounding (tests/swe_domain/test_turn_cache.py), so the mean completion lengths are printed beside
the times to show the arms did the same work.

    python bench/swe_rollout_cache.py                    # ~23 min on 2 cores
    python bench/swe_rollout_cache.py --steps 4 --repeats 2 --turns 6 --turn-tokens 128 --out DIR

A re-run with the same settings and --out keeps the runs that finished (a killed one starts over).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import git
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.efficacy_lib.commands import run_meta_agent, stop_on_sigterm  # noqa: E402
from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.gitops import init_harness  # noqa: E402
from meta_agent.paths import data_dir  # noqa: E402

ARMS = {"re-encoded": False, "kept cache": True}


def _harness(path: Path, keep: bool, turns: int | None, turn_tokens: int | None) -> Path:
    if not path.exists():
        init_harness(path, "swe")
        config = path / "harness.yaml"
        raw = yaml.safe_load(config.read_text())
        raw["domain_settings"]["turn_cache"] = keep
        if turns:
            raw["domain_settings"]["max_turns"] = turns
        if turn_tokens:
            raw["domain_settings"]["turn_tokens"] = turn_tokens
            raw["rl"]["max_completion_length"] = turn_tokens
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
        repo = git.Repo(path)
        repo.git.add(A=True)
        repo.index.commit(f"bench: turn_cache {keep}")
    return path


def _steps(run: Path) -> list[dict[str, float]]:
    lines = (run / "train" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3, help="GRPO steps per run (the first is left out)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--turns", type=int, help="domain_settings.max_turns (default: the template's)")
    ap.add_argument("--turn-tokens", type=int, help="domain_settings.turn_tokens (default: the template's)")
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench-swe-rollout-cache")
    args = ap.parse_args()
    if args.steps < 2:
        ap.error("--steps must be at least 2: the first step is start-up and is left out")
    stop_on_sigterm()
    # Runs are kept by their settings: a re-run with the same ones keeps what finished, other ones start apart.
    shape = f"{Path(args.policy).name}-{args.steps}steps-{args.turns or 'template'}x{args.turn_tokens or 'template'}"
    out = args.out.resolve() / shape
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in ARMS}
    for r in range(args.repeats):
        order = list(ARMS) if r % 2 == 0 else list(reversed(ARMS))
        for name in order:
            harness = _harness(out / f"harness-{ARMS[name]}", ARMS[name], args.turns, args.turn_tokens)
            run = out / f"run-{ARMS[name]}-{r}"
            if not (run / "train" / "metrics.jsonl").is_file():
                run_meta_agent("rollout", "--domain", "swe", "--harness", str(harness), "--policy", args.policy,
                               "--steps", str(args.steps), "--seed", str(r), "--run-dir", str(run),
                               data=data_dir(), who=name)
            later = _steps(run)[1:]
            runs[name].append({"step_s": statistics.mean(s["wall_time"] for s in later),
                               "completion_tokens": statistics.mean(s["completion_length_mean"] for s in later)})
            print(f"  {name}, repeat {r + 1}: {runs[name][-1]['step_s']:.1f} s a step "
                  f"({runs[name][-1]['completion_tokens']:.0f} completion tokens an episode)", flush=True)
    settings = yaml.safe_load((out / "harness-True" / "harness.yaml").read_text())["domain_settings"]
    lines = [f"SmolLM2 SWE GRPO steps 2-{args.steps} through `meta-agent rollout`, {settings['max_turns']} turns x "
             f"{settings['turn_tokens']} tokens, {args.repeats} alternated repeats", "",
             "| arm | s a step (each repeat) | completion tokens an episode | mean s a step |", "|---|---|---|---|"]
    for name, rows in runs.items():
        times = ", ".join(f"{x['step_s']:.1f}" for x in rows)
        tokens = ", ".join(f"{x['completion_tokens']:.0f}" for x in rows)
        lines.append(f"| {name} | {times} | {tokens} | {statistics.mean(x['step_s'] for x in rows):.1f} |")
    old, new = (statistics.mean(x["step_s"] for x in rows) for rows in runs.values())
    lines += ["", f"RATIO kept cache / re-encoded (mean s a step) = {new / old:.3f}"]
    print("\n".join(lines))
    atomic_write_text(out / "table.md", "\n".join(lines) + "\n")
    atomic_write_text(out / "table.json", json.dumps({"ratio": round(new / old, 4), "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
