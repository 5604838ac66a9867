"""Shared fixtures: an isolated cache, the tiny policy, a real sandbox, fresh harness repos."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest

# Tests never write into the user's cache or data dirs.
_SESSION_ROOT = Path(os.environ.get("META_AGENT_TEST_ROOT", "/tmp/meta-agent-tests"))
os.environ["META_AGENT_CACHE"] = str(_SESSION_ROOT / "cache")
os.environ["META_AGENT_DATA"] = str(_SESSION_ROOT / "data")
# One fixed secret for the sealed splits, so every test sees the same selection/test tasks.
os.environ["META_AGENT_SEALED_SECRET"] = "meta-agent-test-suite"

from meta_agent.gitops import init_harness  # noqa: E402
from meta_agent.sealed import sealed_backend  # noqa: E402
from sandboxes import Sandbox  # noqa: E402

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
