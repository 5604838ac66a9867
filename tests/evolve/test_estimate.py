"""`evolve --dry-run`: the plan and its wall time before anything runs, from rates measured on this machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from meta_agent.config import EvolveConfig
from meta_agent.eventlog import EventLog
from meta_agent.evolve.active_time import run_seconds
from meta_agent.evolve.estimate import Rates, estimate_seconds, plan_of
from tests.evolve.conftest import meta_agent, tiny_config


def test_the_plan_counts_every_training_and_evaluation_a_run_can_make() -> None:
    cfg = EvolveConfig.model_validate({"domain": "math", "generations": 3, "candidates": 2, "train_steps": 4,
                                       "selection_limit": 40, "test_limit": 20, "noise_reruns": 1})
    plan = plan_of(cfg, eval_batch=16)
    # per generation main + 2 candidates + 1 noise rerun, and the static arm's generations 1 and 2
    assert (plan.training_runs, plan.grpo_steps) == (3 * 4 + 2, (3 * 4 + 2) * 4)
    # 3 x 4 selection evaluations of 3 batches each, then the evolved and static policies on 2 test batches each
    assert (plan.evaluations, plan.eval_batches) == (3 * 4 + 2, 3 * 4 * 3 + 2 * 2)
    assert plan.llm_sessions == 0


def test_the_plan_of_a_run_with_a_search_step_budget_counts_only_what_the_budget_pays_for() -> None:
    cfg = EvolveConfig.model_validate({"domain": "math", "generations": 3, "candidates": 2, "train_steps": 4,
                                       "selection_limit": 40, "test_limit": 20, "noise_reruns": 1,
                                       "confirm_steps": 8, "search_steps": 28})
    plan = plan_of(cfg, eval_batch=16)
    # 28 steps: 3 noise reruns (12), then 4 of the 6 backtests (16), and no confirmation rung
    assert (plan.training_runs, plan.grpo_steps) == (3 + 3 + 4 + 2, (3 + 3 + 4 + 2) * 4)
    assert plan.evaluations == 3 + 3 + 4 + 2


def test_finished_runs_scale_later_estimates() -> None:
    plan = plan_of(EvolveConfig.model_validate({"domain": "math", "train_steps": 2}), eval_batch=16)
    rates = Rates(key="k", train_start_s=10, step_s=5, eval_batch_s=3, eval_batch=16, measured="now")
    raw = estimate_seconds(plan, rates)
    assert estimate_seconds(plan, rates.model_copy(update={"corrections": [1.5, 2.0, 1.8]})) == \
        pytest.approx(raw * 1.8)


@pytest.mark.slow
def test_the_estimate_of_a_tiny_run_is_near_its_wall_time(reference_run: Path, tmp_path: Path) -> None:
    """At most 2x under (a user planning by it is not cut short) and 3x over. The plan is the run at its most
    (every candidate trained, where some stop earlier), and the calibration and the run are timed minutes apart
    under the other test worker's changing load: a 2x bound above failed one `make test` in three (181 s vs 86 s)."""
    dry = tmp_path / "dry"
    first = meta_agent("evolve", "--config", str(tiny_config(dry)), "--dry-run", data_dir=tmp_path / "data")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "calibrating" in first.stdout and not dry.exists(), "a dry run measures, and writes no run"
    found = re.search(r"\((\d+) s\) of wall time", " ".join(first.stdout.split()))
    assert found, first.stdout
    estimate, real = float(found.group(1)), run_seconds(EventLog(reference_run))
    assert real / 2 <= estimate <= real * 3, f"estimated {estimate:.0f} s, the same run took {real:.0f} s"
    again = meta_agent("evolve", "--config", str(tiny_config(dry)), "--dry-run", data_dir=tmp_path / "data")
    assert "calibrating" not in again.stdout and found.group(0) in " ".join(again.stdout.split()), again.stdout
