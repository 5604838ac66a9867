"""Share of an evolve generation's wall time spent outside policy training, evaluation and proposer calls.

    python bench/loop_overhead.py [--policy smollm2|tiny] [--candidates 2] [--train-steps 4]

Runs one generation of `meta-agent evolve` (math domain, skills proposer, no static arm) and splits
its wall time with the timings the loop journals: whole `harness train` commands, sealed
evaluations, proposer calls; everything else (sandbox start-up, selftest, replay, diagnose,
git, reports, the event log) is loop overhead. Target <= 5%.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.eventlog import EventLog  # noqa: E402
from meta_agent.journal import GenerationDone  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--candidates", type=int, default=2)
    ap.add_argument("--train-steps", type=int, default=4)
    ap.add_argument("--sandbox", default="auto")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        cfg = {"domain": "math", "policy": args.policy, "generations": 1, "candidates": args.candidates,
               "train_steps": args.train_steps, "control": "none", "noise_reruns": 0, "run_dir": str(run),
               "selection_limit": 16, "sandbox": {"backend": args.sandbox}}
        (Path(tmp) / "cfg.yaml").write_text(yaml.safe_dump(cfg))
        env = {**os.environ, "META_AGENT_DATA": str(Path(tmp) / "data")}
        subprocess.run([sys.executable, "-m", "meta_agent", "evolve", "--config", str(Path(tmp) / "cfg.yaml")],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        gen = EventLog(run).done("g0/done", GenerationDone)
    assert gen is not None, "the generation did not finish"
    t = gen.time
    overhead = t["wall"] - t["train"] - t["eval"] - t["proposer"]
    print(f"generation wall {t['wall']:.1f} s: training {t['train']:.1f} s, evaluation {t['eval']:.1f} s, "
          f"proposer {t['proposer']:.1f} s, other {overhead:.1f} s")
    print(f"RATIO loop overhead / generation wall time = {overhead / t['wall']:.3f}  (target <= 0.05)")


if __name__ == "__main__":
    main()
