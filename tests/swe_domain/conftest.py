"""A small SWE task set built from a tiny git project, shared by the SWE domain tests.

Built once per cache (the tests' cache persists between sessions on one machine) with the
real builder: AST mutants of the project, kept only if they fail tests and the gold patch fixes them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import git
import pytest

from meta_agent.contract import write_jsonl
from meta_agent.domains.swe import SweDomain, SweSettings
from meta_agent.gitops import export_tree, init_harness
from meta_agent.swe.build import build_tasks
from meta_agent.swe.sources import Source
from meta_agent.swe.taskset import list_tasksets, save_taskset
from meta_agent.training import TRAIN_TASKS
from tests.swe_tasks.swe_test_projects import CALC, TEST_CALC

TASKSET = "calc-e2e"
SPLIT_SIZES = {"train": 6, "selection": 2, "test": 2}
TEST_SANDBOX = os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")


def _calc_repo(path: Path) -> Path:
    (path / "tests").mkdir(parents=True)
    (path / "calc.py").write_text(CALC)
    (path / "tests" / "test_calc.py").write_text(TEST_CALC)
    repo = git.Repo.init(path, initial_branch="main")
    repo.git.add(A=True)
    repo.index.commit("calc", author=git.Actor("t", "t@t"), committer=git.Actor("t", "t@t"))
    return path


@pytest.fixture(scope="session")
def calc_taskset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Task set `calc-e2e`: 6 train, 2 selection, 2 test instances (one source file, so splits are set here)."""
    if TASKSET in {m.name for m in list_tasksets()}:
        return TASKSET
    source = _calc_repo(tmp_path_factory.mktemp("calc") / "calc")
    instances = build_tasks([Source("git", str(source))], sandbox=TEST_SANDBOX, max_per_project=10, progress=False)
    instances.sort(key=lambda i: i.instance_id)
    assert len(instances) >= sum(SPLIT_SIZES.values()), f"only {len(instances)} instances built"
    splits = [s for s, n in SPLIT_SIZES.items() for _ in range(n)]
    kept = [i.model_copy(update={"split": s}) for i, s in zip(instances, splits, strict=False)]
    save_taskset(TASKSET, kept, origin="tests: calc project")
    return TASKSET


@pytest.fixture
def harness_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An exported SWE harness importable in this process (its code is the unit under test here)."""
    work = export_tree(init_harness(tmp_path / "h", "swe"), "HEAD", tmp_path / "work")
    monkeypatch.syspath_prepend(str(work))
    monkeypatch.chdir(work)
    for name in [m for m in sys.modules if m == "harness" or m.startswith("harness.")]:
        monkeypatch.delitem(sys.modules, name)
    return work


@pytest.fixture
def train_tasks(calc_taskset: str, tmp_path: Path) -> Path:
    """The calc set's train tasks as the harness reads them (archives beside the tasks file)."""
    domain = SweDomain(SweSettings(taskset=calc_taskset, sandbox="bwrap"))
    inputs = tmp_path / "inputs"
    write_jsonl(inputs / TRAIN_TASKS, domain.export_train(inputs))
    return inputs / TRAIN_TASKS
