from __future__ import annotations

from pathlib import Path

import git
import pytest

from meta_agent.domains.math import MathDomain, MathSettings
from meta_agent.gitops import init_harness
from meta_agent.training import TrainedRun, train_commit, write_train_tasks
from sandboxes import Limits, Sandbox

STEPS = 2


@pytest.fixture(scope="session")
def small_math() -> MathDomain:
    return MathDomain(MathSettings(train_size=24, selection_size=8, test_size=8, eval_max_new_tokens=8))


@pytest.fixture(scope="session")
def trained(
    tmp_path_factory: pytest.TempPathFactory, tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain
) -> tuple[git.Repo, TrainedRun, Path]:
    """Two real GRPO steps of the tiny policy under a fresh math harness, in the test sandbox."""
    root = tmp_path_factory.mktemp("trained")
    repo = init_harness(root / "harness", "math")
    tasks = write_train_tasks(small_math, root / "inputs")
    run = train_commit(
        repo=repo, commit=repo.head.commit.hexsha, domain=small_math, sandbox=sandbox, limits=Limits(),
        policy=tiny_policy, root_policy=tiny_policy, steps=STEPS, seed=0, work_dir=root / "work",
        out_dir=root / "train", tasks_file=tasks,
    )
    return repo, run, tasks


def add_brevity_reward(root: Path) -> None:
    """Give the math harness at `root` a reward that differs inside every group, so a step has a gradient."""
    rewards = root / "harness" / "math" / "rewards.py"
    rewards.write_text(rewards.read_text().replace(
        "REWARDS: dict[str, Callable[[Rollout], float]] = {",
        "def brevity(r: Rollout) -> float:\n    return -len(r.completion) / 500\n\n\n"
        "REWARDS: dict[str, Callable[[Rollout], float]] = {\n    \"brevity\": brevity,"))
    cfg = root / "harness.yaml"
    cfg.write_text(cfg.read_text().replace("  correctness: 1.0", "  correctness: 1.0\n  brevity: 1.0"))
