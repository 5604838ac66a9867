"""Building instances from one real, pinned PyPI project (inflection): sdist, hash, sandbox validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_agent.fsutil import sha256_file
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.sdist import fetch_sdist
from meta_agent.swe.statement import changed_lines
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Sandbox
from tests.swe_tasks.swe_test_projects import INFLECTION

pytestmark = pytest.mark.slow  # builds task sets with real pytest runs in the sandbox


def test_pypi_build_yields_validated_instances(inflection_instances: list[SweInstance], swe_sandbox: Sandbox) -> None:
    assert len(inflection_instances) == 4
    for inst in inflection_instances:
        assert inst.repo == "pypi/inflection-0.5.1"
        assert inst.version == "0.5.1"
        assert all(t.startswith("test_inflection.py::") for t in inst.FAIL_TO_PASS)
        before = evaluate_patch(inst, "", swe_sandbox)
        assert all(before.tests[t] in ("failed", "error") for t in inst.FAIL_TO_PASS)
        after = evaluate_patch(inst, inst.patch, swe_sandbox)
        assert after.resolved, after.detail


def test_pypi_problem_statements_contain_no_patch_text(inflection_instances: list[SweInstance]) -> None:
    for inst in inflection_instances:
        assert inst.patch not in inst.problem_statement
        assert not [line for line in changed_lines(inst.patch) if line in inst.problem_statement]
        assert "inflection" in inst.problem_statement


def test_sdist_is_cached_and_verified_by_sha256(inflection_instances: list[SweInstance], swe_cache: Path,
                                                swe_sandbox: Sandbox) -> None:
    archive = fetch_sdist(INFLECTION.name, INFLECTION.version, INFLECTION.sha256, sandbox=swe_sandbox)
    assert sha256_file(archive) == INFLECTION.sha256
    with pytest.raises(SweTaskError, match="sha256"):
        fetch_sdist(INFLECTION.name, INFLECTION.version, "0" * 64, sandbox=swe_sandbox)


def test_unpinned_requirement_is_refused() -> None:
    from meta_agent.swe.build import build_tasks
    from meta_agent.swe.sources import Source

    with pytest.raises(SweTaskError, match="pin an exact version"):
        build_tasks([Source("pypi", "inflection")], sandbox="process", progress=False)
