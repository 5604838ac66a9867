"""`meta-agent report RUN_DIR`: rebuild every rollout report of a run from the files it wrote."""

from __future__ import annotations

from pathlib import Path

from meta_agent.contract import MetricsRecord, Task, TrainSummary, read_json, read_jsonl
from meta_agent.errors import RunDirError
from meta_agent.report.render import write_report
from meta_agent.report.rollout_report import build_report
from meta_agent.runinfo import read_run_info, run_root
from meta_agent.training import TRAIN_TASKS, VERIFIED, load_labelled


def rerender(path: Path) -> list[Path]:
    """Re-render each training dir (one with rollouts.verified.jsonl) under `path`; returns report.md paths."""
    train_dirs = sorted({p.parent for p in path.rglob(VERIFIED)})
    if not train_dirs:
        raise RunDirError(f"no finished training run under {path} (no {VERIFIED} found)")
    info = read_run_info(path)
    tasks = {t.id: t for t in read_jsonl(run_root(path) / "inputs" / TRAIN_TASKS, Task)}
    written = []
    for d in train_dirs:
        report = build_report(
            domain=info.domain,
            policy=info.policy,
            rollouts=load_labelled(d),
            metrics=read_jsonl(d / "metrics.jsonl", MetricsRecord),
            tasks=tasks,
            train_wall_time=read_json(d / "train_summary.json", TrainSummary).wall_time,
        )
        written.append(write_report(report, d)["md"])
    return written
