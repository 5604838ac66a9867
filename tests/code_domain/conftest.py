"""Fixtures for the code domain: one sealed CodeDomain (HumanEval only, the test sandbox) per session,
and an ProgramExecutor on the same sandbox backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meta_agent.code_tasks.executor import ProgramExecutor
from meta_agent.domains.code import CodeDomain, CodeSettings
from tests.conftest import TEST_SANDBOX

SETTINGS = CodeSettings(sources=["humaneval"], sandbox=TEST_SANDBOX, train_size=40, selection_size=12, test_size=12,
                        eval_max_new_tokens=16, test_timeout_s=3.0)


@pytest.fixture(scope="session")
def code_domain() -> Iterator[CodeDomain]:
    domain = CodeDomain(SETTINGS)
    yield domain
    domain.close()


@pytest.fixture(scope="session")
def executor() -> Iterator[ProgramExecutor]:
    with ProgramExecutor(TEST_SANDBOX, timeout_s=2.0, memory_mb=512, workers=2) as ex:
        yield ex
