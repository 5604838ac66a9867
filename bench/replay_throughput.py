"""Rollouts re-scored per second by `harness replay` in the sandbox vs the same scoring in-process.

    python bench/replay_throughput.py [--rollouts 10000] [--sandbox auto]

The sandboxed side includes everything a backtest pays: sandbox start, interpreter start-up,
reading and writing JSONL, and meta-agent's contract validation of the output. Target >= 0.5.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.contract import RolloutRecord, write_jsonl  # noqa: E402
from meta_agent.domains.math import MathDomain, MathSettings  # noqa: E402
from meta_agent.gitops import export_tree, init_harness  # noqa: E402
from meta_agent.harness_runner import HarnessRunner  # noqa: E402
from sandboxes import get_backend  # noqa: E402


def synthetic_rollouts(n: int, domain: MathDomain) -> list[RolloutRecord]:
    """A mix a real run produces: right answers, wrong ones, unformatted text, sprays, groups of 4."""
    rng = random.Random(0)
    tasks = domain.tasks("train")
    out = []
    for i in range(n):
        t = tasks[(i // 4) % len(tasks)]
        kind = rng.choice(["right", "wrong", "prose", "spray"])
        completion = {"right": f"Let me compute.\nAnswer: {t.answer}", "wrong": "Answer: 12345",
                      "prose": "I think the result is probably large " * 3,
                      "spray": " ".join(str(rng.randint(0, 99)) for _ in range(12))}[kind]
        out.append(RolloutRecord(
            rollout_id=f"r{i}", step=1 + i // 8, task_id=t.id, group_id=f"g{i // 4}", prompt=t.prompt,
            completion=completion, rewards={}, reward=0.0, advantage=0.0, prompt_tokens=40,
            completion_tokens=len(completion.split()), truncated=kind == "prose", labels=[], harness_commit="bench",
            verified=kind == "right"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=10_000)
    ap.add_argument("--sandbox", default="auto")
    args = ap.parse_args()
    domain = MathDomain(MathSettings(train_size=256))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = init_harness(root / "harness", "math")
        work = export_tree(repo, "HEAD", root / "work")
        data = root / "data"
        write_jsonl(data / "tasks.jsonl", domain.tasks("train"))
        rollouts = synthetic_rollouts(args.rollouts, domain)
        write_jsonl(data / "rollouts.jsonl", rollouts)

        sys.path.insert(0, str(work))
        cwd = os.getcwd()
        os.chdir(work)
        from harness.replay import replay

        start = time.perf_counter()
        replay(data / "rollouts.jsonl", data / "tasks.jsonl", root / "inproc.jsonl")
        inproc = time.perf_counter() - start
        os.chdir(cwd)

        sandbox = get_backend(args.sandbox)
        start = time.perf_counter()
        with HarnessRunner(sandbox, work, commit="bench", readable=[data], writable=[root / "out"]) as runner:
            records = runner.replay(rollouts=data / "rollouts.jsonl", tasks=data / "tasks.jsonl",
                                    out=root / "out" / "replay.jsonl", expected={r.rollout_id for r in rollouts})
        boxed = time.perf_counter() - start
    assert len(records) == args.rollouts
    n = args.rollouts
    print(f"in-process: {n / inproc:,.0f} rollouts/s ({inproc:.2f} s); "
          f"{sandbox.name} sandbox: {n / boxed:,.0f} rollouts/s ({boxed:.2f} s)")
    print(f"RATIO sandboxed/in-process throughput = {inproc / boxed:.3f}  (target >= 0.5)")


if __name__ == "__main__":
    main()
