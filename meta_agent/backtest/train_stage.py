"""Stage 3, train: a short run of the candidate from the generation's starting policy with the control's
seed and steps, then the sealed evaluator on the selection split, paired per task with the control."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import git

from meta_agent.domains import Domain, EvalResult
from meta_agent.harness_runner import HarnessError
from meta_agent.stats import paired_bootstrap_ci
from meta_agent.training import TrainedRun, train_commit
from meta_agent.verdicts import StageResult


@dataclass
class Control:
    """What the candidate is compared with: main's run of this generation."""

    run: TrainedRun
    eval: EvalResult
    invalid_share: float


def invalid_share(run: TrainedRun, labels: tuple[str, ...]) -> float:
    return sum(1 for r in run.rollouts if set(r.labels) & set(labels)) / max(1, len(run.rollouts))


def run_train_stage(
    *,
    repo: git.Repo,
    commit: str,
    domain: Domain,
    control: Control,
    train_kwargs: dict[str, object],
    out_dir: Path,
    work_dir: Path,
    eval_limit: int | None,
    root_policy: Path,
    seed: int,
) -> tuple[StageResult, TrainedRun | None, EvalResult | None]:
    started = time.monotonic()
    try:
        trained = train_commit(repo=repo, commit=commit, domain=domain, out_dir=out_dir, work_dir=work_dir,
                               **train_kwargs)  # type: ignore[arg-type]
    except HarnessError as e:
        return StageResult(stage="train", passed=False, reason=e.reason, seconds=time.monotonic() - started), \
            None, None
    result = domain.evaluate(trained.checkpoint, "selection", limit=eval_limit, root=root_policy)
    control_scores = control.eval.per_task()
    ids = [r.task_id for r in result.results]
    paired = paired_bootstrap_ci([result.per_task()[i] for i in ids], [control_scores[i] for i in ids], seed=seed)
    metrics = {
        "selection_score": result.score.mean,
        "control_score": control.eval.score.mean,
        "delta": paired.mean,
        "ci": [paired.low, paired.high],
        "train_reward": trained.report.reward_mean,
        "control_train_reward": control.run.report.reward_mean,
        "invalid_share": invalid_share(trained, domain.invalid_labels),
        "control_invalid_share": control.invalid_share,
        "checkpoint": str(trained.checkpoint),
        "tasks": len(ids),
        "train_seconds": trained.output.seconds,
        "eval_seconds": result.wall_time,
    }
    return StageResult(
        stage="train", passed=True, seconds=time.monotonic() - started, metrics=metrics,
        reason=f"selection {result.score.mean:.3f} vs control {control.eval.score.mean:.3f}; "
               f"paired delta {paired.mean:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}]",
    ), trained, result
