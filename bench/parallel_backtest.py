"""Wall time of a generation's K training backtests, fanned out vs one after another in the driver.

    python bench/parallel_backtest.py [--policy smollm2|tiny] [--train-steps 2] [--k 2]

One short evolve generation (math domain, one candidate, no static arm, no noise rerun) provides
main's trained run and its sealed selection score, i.e. what a candidate's backtest is compared
with. Then the same K backtests (main's commit, each in its own candidate dir: a backtest of any
commit costs the same) run under three executors, side by side in this one process:

- local, --parallel 1: in the driver, one after another (the baseline, the behaviour before the seam);
- local, --parallel K: K worker processes, each with its share of the cores for torch (their
  start-up, timed apart, overlaps main's training in a run);
- ray: K Ray tasks on a private local Ray instance (its start-up is timed separately).

Prints each wall time and RATIO = fanned-out / sequential (target <= 0.65 for K = 2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.config import EvolveConfig  # noqa: E402
from meta_agent.domains import domain_for  # noqa: E402
from meta_agent.eventlog import EventLog  # noqa: E402
from meta_agent.execution.base import make_executor  # noqa: E402
from meta_agent.execution.jobs import JobEnv, TrainJob  # noqa: E402
from meta_agent.execution.settings import ExecutorSettings  # noqa: E402
from meta_agent.journal import GenerationDone, RunStarted  # noqa: E402
from meta_agent.runinfo import read_run_info  # noqa: E402
from meta_agent.sealed import sealed_backend  # noqa: E402
from meta_agent.verdicts import StageResult  # noqa: E402


def jobs_for(run: Path, k: int, out: Path) -> list[TrainJob]:
    cfg = EvolveConfig.model_validate(read_run_info(run).settings)
    log = EventLog(run)
    started, gen = log.done("run/start", RunStarted), log.done("g0/done", GenerationDone)
    assert started and gen, f"{run}: the setup generation did not finish"
    gdir = run / "gen-000"
    return [TrainJob(key=f"bench/{i}", stage_id=f"bench-{i}", config=cfg.model_dump(mode="json"),
                     harness=started.harness, commit=gen.main_before, main_commit=gen.main_before,
                     policy=started.root_policy, root_policy=started.root_policy, history=None,
                     tasks_file=str(run / "inputs" / "train_tasks.jsonl"), seed=cfg.seed, steps=cfg.steps,
                     control_dir=str(gdir / "main"), control_eval=str(gdir / "control-eval.json"),
                     guard_labels=[], level=0.95, cand_dir=str(out / f"cand-{i}"), eval_limit=cfg.selection_limit)
            for i in range(k)]


def timed(settings: ExecutorSettings, jobs: list[TrainJob], env: JobEnv) -> tuple[float, float, str]:
    """(start-up seconds, seconds for all jobs, where one backtest's time went)."""
    t0 = time.monotonic()
    executor = make_executor(settings)
    warm = getattr(executor, "warm", None)
    if warm is not None:  # local workers: in a run they start at set-up and warm up while main trains
        warm()
    t1 = time.monotonic()
    try:
        results = [(job, StageResult.model_validate(r.model_dump())) for job, r in executor.run(jobs, env)]
    finally:
        executor.close()
    t2 = time.monotonic()
    failed = [r.reason for _, r in results if not r.passed]
    assert len(results) == len(jobs) and not failed, f"a backtest failed: {failed}"
    mean = {k: sum(float(r.metrics[k]) for _, r in results) / len(results) for k in ("train_seconds", "eval_seconds")}
    each = sum(r.seconds for _, r in results) / len(results)
    return t1 - t0, t2 - t1, (f"one backtest {each:.1f} s: `harness train` {mean['train_seconds']:.1f} s, "
                              f"sealed eval {mean['eval_seconds']:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--train-steps", type=int, default=2)
    ap.add_argument("--k", type=int, default=2, help="backtests per generation")
    ap.add_argument("--selection-limit", type=int, default=16)
    ap.add_argument("--sandbox", default="auto")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        cfg = {"domain": "math", "policy": args.policy, "generations": 1, "candidates": 1,
               "train_steps": args.train_steps, "control": "none", "noise_reruns": 0, "run_dir": str(run),
               "selection_limit": args.selection_limit, "sandbox": {"backend": args.sandbox}}
        (Path(tmp) / "cfg.yaml").write_text(yaml.safe_dump(cfg))
        os.environ["META_AGENT_DATA"] = str(Path(tmp) / "data")
        print(f"setting up: one {args.policy} generation of {args.train_steps} steps ...", flush=True)
        subprocess.run([sys.executable, "-m", "meta_agent", "evolve", "--config", str(Path(tmp) / "cfg.yaml")],
                       check=True, stdout=subprocess.DEVNULL)
        config = EvolveConfig.model_validate(read_run_info(run).settings)
        env = JobEnv(domain=domain_for(config), sandbox=sealed_backend(config.sandbox.backend),
                     repo=git.Repo(read_run_info(run).harness))
        arms = [("local sequential", ExecutorSettings(kind="local", parallel=1)),
                (f"local --parallel {args.k}", ExecutorSettings(kind="local", parallel=args.k)),
                ("ray", ExecutorSettings(kind="ray"))]
        times: dict[str, float] = {}
        for name, settings in arms:
            startup, wall, parts = timed(settings, jobs_for(run, args.k, Path(tmp) / name.replace(" ", "_")), env)
            times[name] = wall
            print(f"{name:>22}: {args.k} backtests in {wall:6.1f} s (executor start-up {startup:.1f} s; {parts})",
                  flush=True)
    base = times["local sequential"]
    print(f"cores: {os.cpu_count()}, policy {args.policy}, {args.train_steps} GRPO steps + "
          f"{args.selection_limit} selection tasks per backtest")
    for name in list(times)[1:]:
        print(f"RATIO {name} / local sequential = {times[name] / base:.3f}  (target <= 0.65)")


if __name__ == "__main__":
    main()
