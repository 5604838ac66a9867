"""Would two efficacy arms side by side finish sooner than one after the other? An A/B in one run.

    python bench/efficacy_lanes.py [--steps 8] [--limit 100] [--preset cpu]

An efficacy arm is a `meta-agent rollout` (GRPO steps from the initial policy) and a `meta-agent eval` of its
checkpoint on the test split, each a fresh interpreter, run by bench/efficacy_lib/commands.py. This runs the
same arm (the reference harness, the same seed) four times, after an untimed warm-up that fills the disk cache:

- one after the other, each child with every core (how `bench/efficacy.py --lanes 1` runs a seed);
- two side by side, each child with its share of the cores (`OMP_NUM_THREADS`; `--lanes 2`).

In the order alone, side by side, alone: a machine whose speed drifts during the run weighs on both sides.

Prints both walls, RATIO = side by side / one after the other (below 1: lanes save time), and whether the
four evaluations gave the same answers (a different thread count may sum in another order, so sampled
completions may differ; the benchmark compares arms trained the same way, so either is fair).

Why in one run: this machine's speed varies between hours, and lanes compared with a seed of another day
were once taken out on a confounded comparison (docs/evolve.md, Time).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.efficacy import arm_settings  # noqa: E402
from bench.efficacy_lib.commands import run_meta_agent  # noqa: E402
from bench.efficacy_lib.lanes import threads_per_lane  # noqa: E402
from bench.efficacy_lib.reference import make_reference_harness  # noqa: E402


class Arm:
    """One efficacy arm's two commands, in `work`, with a shared data dir (one secret: the same test tasks)."""

    def __init__(self, work: Path, config: Path, harness: Path, steps: int, limit: int) -> None:
        self.work, self.config, self.harness, self.steps, self.limit = work, config, harness, steps, limit

    def __call__(self, name: str, threads: int | None, steps: int | None = None, limit: int | None = None) -> float:
        run, out = self.work / name, self.work / f"{name}.json"
        started = time.monotonic()
        common = {"data": self.work / "data", "who": name, "threads": threads}
        run_meta_agent("rollout", "--config", str(self.config), "--steps", str(steps or self.steps), "--seed", "0",
                       "--run-dir", str(run), "--harness", str(self.harness), **common)
        run_meta_agent("eval", "--config", str(self.config), "--policy", str(run / "train" / "checkpoint"),
                       "--split", "test", "--limit", str(limit or self.limit), "--out", str(out), "--show", "0",
                       **common)
        return time.monotonic() - started

    def answers(self, name: str) -> list[str]:
        return [r["completion"] for r in json.loads((self.work / f"{name}.json").read_text())["results"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=8, help="GRPO steps per arm (default 8)")
    ap.add_argument("--limit", type=int, default=100, help="test tasks each arm's evaluation scores (default 100)")
    ap.add_argument("--preset", choices=("tiny", "cpu"), default="cpu", help="the efficacy preset (default cpu)")
    ap.add_argument("--sandbox", default="auto", help="sandbox backend of the arms (default auto)")
    args = ap.parse_args()

    lanes = 2
    threads = threads_per_lane(lanes)
    with tempfile.TemporaryDirectory(prefix="efficacy-lanes-") as tmp:
        work = Path(tmp)
        config = work / "run.yaml"
        config.write_text(yaml.safe_dump(arm_settings(args.preset, args.sandbox)[0]))
        arm = Arm(work, config, make_reference_harness(work / "reference", "math"), args.steps, args.limit)
        print("warm-up (untimed): 1 step, 4 tasks ...", flush=True)
        arm("warm-up", None, steps=1, limit=4)
        # alone, side by side, alone: a machine that slows down or speeds up during the run (it does, by the
        # hour) weighs on both sides alike
        print(f"alone: 1 arm of {args.steps} steps + {args.limit} test tasks, every core ...", flush=True)
        sequential = [arm("alone-0", None)]
        print(f"side by side: {lanes} arms, {threads} thread(s) each ...", flush=True)
        started = time.monotonic()
        with ThreadPoolExecutor(lanes) as pool:
            side = list(pool.map(lambda i: arm(f"lane-{i}", threads), range(lanes)))
        side_wall = time.monotonic() - started
        print("alone again: the second arm, every core ...", flush=True)
        sequential.append(arm("alone-1", None))
        names = [f"alone-{i}" for i in range(lanes)] + [f"lane-{i}" for i in range(lanes)]
        answers = {name: arm.answers(name) for name in names}
        same = [sum(a == b for a, b in zip(answers[names[0]], answers[n], strict=True)) for n in names]

    print(f"one after the other: {sum(sequential):7.1f} s (arms {', '.join(f'{s:.1f}' for s in sequential)} s)")
    print(f"       side by side: {side_wall:7.1f} s (arms {', '.join(f'{s:.1f}' for s in side)} s)")
    equal = ", ".join(f"{n} {s}" for n, s in zip(names, same, strict=True))
    print(f"answers equal to alone-0's, of {args.limit}: {equal}")
    print(f"RATIO side by side / one after the other = {side_wall / sum(sequential):.3f}  (below 1: lanes save time)")


if __name__ == "__main__":
    main()
