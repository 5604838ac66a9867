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
TEST_ROOT = _SESSION_ROOT
os.environ["META_AGENT_CACHE"] = str(_SESSION_ROOT / "cache")
os.environ["META_AGENT_DATA"] = str(_SESSION_ROOT / "data")
# No test reuses another test's training or sealed answers (meta_agent/train_memo.py): what a test sees of a
# run (its progress, its crash points, its timings) must not depend on which tests ran before it.
# tests/evolve/test_train_memo.py turns the store on for its own runs.
os.environ["META_AGENT_REUSE"] = "off"
# One fixed secret for the sealed splits, so every test sees the same selection/test tasks.
os.environ["META_AGENT_SEALED_SECRET"] = "meta-agent-test-suite"

from meta_agent.gitops import init_harness  # noqa: E402
from meta_agent.sealed import sealed_backend  # noqa: E402
from sandboxes import Sandbox  # noqa: E402

SERIAL_GROUP = "one-at-a-time"
"""The xdist scope of the tests that share one machine-wide thing: the private dockerd (every docker test is
under tests/sandboxes/ or tests/swe_images/) and a local Ray instance (tests/evolve/test_executors.py)."""
SERIAL_PATHS = ("tests/sandboxes/", "tests/swe_images/", "tests/evolve/test_executors.py")


REFERENCE_GROUP = "reference-run"
REFERENCE_PATHS = ("tests/evolve/test_evolve_e2e.py", "tests/evolve/test_decisions_unchanged.py",
                   "tests/evolve/test_tracker_export.py", "tests/evolve/test_estimate.py")
"""The modules that read the session's real-GRPO `reference_run` (tests/evolve/conftest.py): on one worker, so it is
trained once (split over two workers it was trained twice, ~3 min each)."""

LONGEST_FIRST = ("tests/evolve/test_adversarial_gate.py", "tests/evolve/test_crash_points.py", SERIAL_GROUP,
                 REFERENCE_GROUP, "tests/llm/test_evolve_llm.py", "tests/foundation/test_sealed_view.py",
                 "tests/evolve/test_faults.py", "tests/code_domain/test_evolve_code.py",
                 "tests/swe_domain/test_swe_evolve_e2e.py", "tests/efficacy/test_efficacy_bench.py")
"""Work units that took 3-7 minutes each in `make test` (--durations): started first, so the two workers end
together instead of one running a long module alone at the end."""


PACKAGE_SCOPED = ("tests/swe_tasks/",)
"""Packages whose conftest builds package-scoped fixtures (task sets, ~20 s each): one work unit, so its tests run
together and build them once. Split into modules, pytest tore them down whenever a worker moved to another
package and built them again for the next module (five builds of the calc set in one `make test`)."""


def scope_of(nodeid: str) -> str:
    """A test's xdist work unit: its module, so module fixtures are built once, or a group that shares something
    (the serial group, the reference run, a package's fixtures)."""
    path = nodeid.split("::")[0]
    if path.startswith(SERIAL_PATHS):
        return SERIAL_GROUP
    package = next((p for p in PACKAGE_SCOPED if path.startswith(p)), None)
    return package or (REFERENCE_GROUP if path in REFERENCE_PATHS else path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test` schedules by `scope_of`. (Not xdist_group marks: pytest 9 derives a test's nodeid from its
    structured id, and the `@group` suffix xdist 3.8 writes into `_nodeid` no longer reaches the scheduler.)"""
    from xdist.scheduler import LoadScopeScheduling

    # xdist otherwise re-sorts the work units by their number of tests, undoing the longest-first order that
    # pytest_collection_modifyitems gives them (one long single-test module then ran alone at the end)
    config.option.loadscopereorder = False

    class ByScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ByScope(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest work units first, then the other modules holding slow tests, so under xdist the long ones start
    early and the quick ones fill in at the end (the order within a module is kept)."""
    slow = {scope_of(i.nodeid) for i in items if i.get_closest_marker("slow") is not None}

    def rank(item: pytest.Item) -> tuple[int, int]:
        scope = scope_of(item.nodeid)
        return (0, LONGEST_FIRST.index(scope)) if scope in LONGEST_FIRST else (1 if scope in slow else 2, 0)

    items.sort(key=rank)


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
