"""Fixtures for the SWE task builder: a fresh task cache per session, a tiny git project, real builds.

Each session builds into a fresh cache so the tests exercise the real pipeline instead of
resuming an earlier run; only downloaded sdists are shared across sessions (hash-checked),
so the network is touched once.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from meta_agent.swe.build import build_tasks
from meta_agent.swe.env import project_env
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.sources import Source
from sandboxes import Sandbox, get_backend
from tests.swe_tasks.swe_test_projects import CALC, INFLECTION, TEST_CALC, UNITS_FILES, make_repo


@pytest.fixture(scope="package")
def swe_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh META_AGENT_CACHE for this session whose downloads (sdists, installed deps, verify venvs)
    are shared with later sessions."""
    shared = Path(os.environ["META_AGENT_CACHE"])
    fresh = tmp_path_factory.mktemp("swe-cache")
    (fresh / "swe").mkdir()
    for downloads in ("sdists", "envs", "verify-envs"):
        (shared / "swe" / downloads).mkdir(parents=True, exist_ok=True)
        (fresh / "swe" / downloads).symlink_to(shared / "swe" / downloads)
    os.environ["META_AGENT_CACHE"] = str(fresh)
    try:
        yield fresh
    finally:
        os.environ["META_AGENT_CACHE"] = str(shared)


@pytest.fixture(scope="package")
def swe_env(swe_cache: Path, swe_sandbox: Sandbox) -> Path:
    """The test venv with pytest and no deps (shared across sessions like the other downloads)."""
    return project_env([], swe_sandbox)


@pytest.fixture(scope="package")
def swe_sandbox() -> Sandbox:
    return get_backend(os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap"))


def make_calc_repo(path: Path) -> git.Repo:
    """A git repo with one module and its tests, committed."""
    (path / "tests").mkdir(parents=True)
    (path / "calc.py").write_text(CALC)
    (path / "tests" / "test_calc.py").write_text(TEST_CALC)
    (path / "README.md").write_text(textwrap.dedent("calc: a tiny project for building SWE tasks in tests\n"))
    repo = git.Repo.init(path, initial_branch="main")
    repo.git.add(A=True)
    repo.index.commit("calc with tests", author=git.Actor("t", "t@t"), committer=git.Actor("t", "t@t"))
    return repo


@pytest.fixture(scope="package")
def calc_repo(tmp_path_factory: pytest.TempPathFactory) -> git.Repo:
    return make_calc_repo(tmp_path_factory.mktemp("calc") / "calc")


@pytest.fixture(scope="package")
def calc_instances(swe_cache: Path, calc_repo: git.Repo, swe_sandbox: Sandbox) -> list[SweInstance]:
    return build_tasks([Source("git", str(calc_repo.working_dir))], sandbox=swe_sandbox, max_per_project=8,
                       seed=0, progress=False)


@pytest.fixture(scope="package")
def inflection_instances(swe_cache: Path, swe_sandbox: Sandbox) -> list[SweInstance]:
    return build_tasks([INFLECTION.source()], sandbox=swe_sandbox, max_per_project=4, seed=0, progress=False)


@pytest.fixture(scope="package")
def units_repo(tmp_path_factory: pytest.TempPathFactory) -> git.Repo:
    return make_repo(tmp_path_factory.mktemp("units") / "units", UNITS_FILES)


@pytest.fixture(scope="package")
def units_instances(swe_cache: Path, units_repo: git.Repo, swe_sandbox: Sandbox) -> list[SweInstance]:
    return build_tasks([Source("git", str(units_repo.working_dir))], sandbox=swe_sandbox, max_per_project=8,
                       seed=0, progress=False)
