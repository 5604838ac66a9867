"""Shared fixtures: an isolated cache, the tiny policy, a real sandbox, fresh harness repos."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest

# Tests never write into the user's cache or data dirs. Under `pytest -n N` each worker has its own root,
# so two workers never build the same cached task set or model at once.
_SESSION_ROOT = Path(os.environ.get("META_AGENT_TEST_ROOT", "/tmp/meta-agent-tests"))
if os.environ.get("PYTEST_XDIST_WORKER"):
    _SESSION_ROOT = _SESSION_ROOT / os.environ["PYTEST_XDIST_WORKER"]
    # Each worker's share of the cores for torch (sandboxes pass it on to training). Without it every
    # training on a 2-core machine spins 2 OpenMP threads against the other worker's: two tiny evolve
    # runs side by side took 320 s each with the default threads, 130 s each with one (one alone: 140 s).
    _share = max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    for _key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_key, str(_share))
os.environ["META_AGENT_CACHE"] = str(_SESSION_ROOT / "cache")
os.environ["META_AGENT_DATA"] = str(_SESSION_ROOT / "data")
# One fixed secret for the sealed splits, so every test sees the same selection/test tasks.
os.environ["META_AGENT_SEALED_SECRET"] = "meta-agent-test-suite"

from meta_agent.gitops import init_harness  # noqa: E402
from meta_agent.sealed import sealed_backend  # noqa: E402
from sandboxes import Sandbox  # noqa: E402

SERIAL_GROUP = "one-at-a-time"
"""xdist group of the tests that share one machine-wide thing: the private dockerd, a local Ray cluster."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Schedule for `pytest -n N --dist loadgroup` (what `make test` runs).

    A module's tests stay on one worker, so its module-scoped fixtures (a trained run that several tests
    read) are built once; the docker and Ray tests share one worker, as they share one engine. Modules
    holding slow tests go first, so the long ones start early and the quick ones fill in at the end.
    Without xdist the marks are inert and only the order changes.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:  # a module that chose its group (Ray)
            continue
        serial = item.get_closest_marker("docker") is not None
        item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP if serial else item.nodeid.split("::")[0]))
    slow_groups = {_group(i) for i in items if i.get_closest_marker("slow") is not None}
    items.sort(key=lambda i: _group(i) not in slow_groups)  # stable: the order within a group is kept


def _group(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker is not None and marker.args else ""


TEST_SANDBOX = os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")
"""Backend the harness tests run through; bwrap is installed by .ci/run. Set to docker to cover it too."""


@pytest.fixture(scope="session")
def tiny_policy() -> Path:
    """A ~3M-parameter random Llama with SmolLM2's tokenizer (built once per cache)."""
    from meta_agent.policy import tiny_policy

    return tiny_policy()


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    return sealed_backend(TEST_SANDBOX)


@pytest.fixture
def math_harness(tmp_path: Path) -> git.Repo:
    return init_harness(tmp_path / "harness", "math")


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add(A=True)
    repo.index.commit(message)
    return repo.head.commit.hexsha


@pytest.fixture
def chdir_tmp(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def journal(run: Path, event: type[Any]) -> list[dict[str, Any]]:
    """The run's journal events of one type, as the dicts a test asserts on."""
    from meta_agent.eventlog import EventLog

    return [e.model_dump(mode="json") for e in EventLog(run, repair=False).of_type(event)]
