"""Entry point: `python -m harness train|replay|diagnose|selftest`. PROTECTED: agents may not edit it.

meta-agent calls these verbs, inside a sandbox, with exactly these arguments.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from harness.config import ConfigError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = p.add_subparsers(dest="verb", required=True)
    t = sub.add_parser("train", help="GRPO training; writes checkpoint/, rollouts.jsonl, metrics.jsonl")
    t.add_argument("--policy", type=Path, required=True, help="model dir or a checkpoint dir this harness wrote")
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--tasks", type=Path, required=True, help="training tasks (JSONL)")
    t.add_argument("--history", type=Path, default=None, help="earlier rollouts.jsonl, for the curriculum")
    t.add_argument("--progress", action="store_true", help="print one line per step")
    for verb, what in (("replay", "re-scored rollouts"), ("diagnose", "failure-mode labels per rollout")):
        r = sub.add_parser(verb, help=f"write {what} (JSONL) for stored rollouts, without a model")
        r.add_argument("--rollouts", type=Path, required=True)
        r.add_argument("--tasks", type=Path, required=True)
        r.add_argument("--out", type=Path, required=True)
    sub.add_parser("selftest", help="run this harness's own test suite")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.verb == "train":
            from harness.train import train

            train(args.policy, args.steps, args.seed, args.out, args.tasks, args.history, args.progress)
        elif args.verb == "replay":
            from harness.replay import replay

            replay(args.rollouts, args.tasks, args.out)
        elif args.verb == "diagnose":
            from harness.replay import diagnose

            diagnose(args.rollouts, args.tasks, args.out)
        else:
            return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
    except ConfigError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
