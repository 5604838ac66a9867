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
