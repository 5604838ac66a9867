"""`replay` and `diagnose`: re-score stored rollouts with this version's code, no model needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config import HarnessConfig, load_config
from harness.domain import load_domain
from harness.io import read_jsonl, read_tasks, write_jsonl
from harness.rollout import Rollout, Scored
from harness.scoring import score_batch


def load_rollouts(rollouts_file: Path, tasks_file: Path, cfg: HarnessConfig) -> list[Rollout]:
    tasks = {t["id"]: t for t in read_tasks(tasks_file)}
    out = []
    for rec in read_jsonl(rollouts_file):
        task = tasks.get(rec["task_id"])
        if task is None:
            raise SystemExit(f"{rollouts_file}: rollout {rec['rollout_id']} names task {rec['task_id']!r}, "
                             f"which is not in {tasks_file}")
        out.append(
            Rollout(
                rollout_id=rec["rollout_id"], task=task, prompt=rec["prompt"], completion=rec["completion"],
                completion_tokens=rec["completion_tokens"], truncated=rec["truncated"], group_id=rec["group_id"],
                max_completion_length=cfg.rl.max_completion_length, extra=rec.get("extra") or {},
                verified=rec.get("verified"), settings=cfg.domain_settings,
            )
        )
    return out


def rescore(rollouts_file: Path, tasks_file: Path) -> list[Scored]:
    cfg = load_config()
    return score_batch(load_domain(cfg.domain), cfg, load_rollouts(rollouts_file, tasks_file, cfg))


def replay_record(s: Scored) -> dict[str, Any]:
    return {
        "rollout_id": s.rollout.rollout_id,
        "rewards": s.rewards,
        "reward": s.reward,
        "advantage": s.advantage,
        "weight": s.weight,
        "labels": s.labels,
    }


def replay(rollouts_file: Path, tasks_file: Path, out: Path) -> int:
    return write_jsonl(out, (replay_record(s) for s in rescore(rollouts_file, tasks_file)))


def diagnose(rollouts_file: Path, tasks_file: Path, out: Path) -> int:
    records = ({"rollout_id": s.rollout.rollout_id, "labels": s.labels} for s in rescore(rollouts_file, tasks_file))
    return write_jsonl(out, records)
