"""What a user building a set sees before and after the work: clear refusals, warnings, one default, stable results."""

from __future__ import annotations

import inspect
import json
import os
import re
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.swe import taskset
from meta_agent.swe.build import build_tasks
from meta_agent.swe.defaults import DEFAULT_MAX_PER_PROJECT
from meta_agent.swe.env import env_mounts
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import TestSetup
from meta_agent.swe.sources import Source
from meta_agent.swe.testrun import run_tests
from sandboxes import Sandbox
from tests.swe_tasks.conftest import make_calc_repo
from tests.swe_tasks.swe_test_projects import SLOW_FILES, SLOW_MUTANT_LINE, make_repo, write_tree

pytestmark = pytest.mark.slow  # builds task sets with real pytest runs in the sandbox

DOCS = Path(__file__).resolve().parents[2] / "docs" / "swe-tasks.md"
SANDBOX = os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")


def test_a_project_without_tests_is_refused_before_any_work(swe_cache: Path, tmp_path: Path) -> None:
    # Its own project name: other modules on this worker may have built calc into the shared cache already.
    first = make_calc_repo(tmp_path / "firstproj")
    bare = make_repo(tmp_path / "notests", {"lib.py": "def f(x):\n    return x + 1\n"})
    with pytest.raises(SweTaskError, match="has no test files") as refused:
        build_tasks([Source("git", str(first.working_dir)), Source("git", str(bare.working_dir))],
                    sandbox=SANDBOX, progress=False)
    assert "--from-git" in str(refused.value) and "--deps" not in str(refused.value)
    assert (swe_cache / "swe").is_dir()
    assert not list((swe_cache / "swe").rglob("*firstproj*/*/mutants.jsonl")), \
        "the first project was built before the second was checked"


def test_one_default_for_instances_per_project() -> None:
    assert inspect.signature(build_tasks).parameters["max_per_project"].default == DEFAULT_MAX_PER_PROJECT
    assert "max_per_project" not in inspect.signature(taskset.build_default).parameters, "the default set is pinned"
    shown = " ".join(CliRunner().invoke(app, ["build", "--help"], env={"COLUMNS": "200"}).output.split())
    assert f"(default {DEFAULT_MAX_PER_PROJECT};" in shown
    assert f"Up to {DEFAULT_MAX_PER_PROJECT} instances per project" in DOCS.read_text()
    refused = CliRunner().invoke(app, ["build", "--default", "--max-per-project", "50"])
    assert refused.exit_code != 0 and "pinned" in refused.output


def test_an_empty_split_is_warned_about(calc_repo: git.Repo, calc_instances: object, tmp_path: Path) -> None:
    """Two instances: the shares (70 / 15 / 15) put both in train, whatever functions they are in."""
    out = tmp_path / "calc.jsonl"
    result = CliRunner().invoke(app, ["build", "--from-git", str(calc_repo.working_dir), "--out", str(out),
                                      "--max-per-project", "2", "--sandbox", SANDBOX, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert re.search(r"warning:.*split .*empty", " ".join(result.output.split())), result.output


def test_the_runner_ends_a_run_whose_test_hangs(swe_sandbox: Sandbox, swe_env: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "hang", {"tests/test_hang.py": "import time\n\n\ndef test_ok():\n    pass\n\n\n"
                                                                "def test_hangs():\n    time.sleep(600)\n"})
    with swe_sandbox.open(root, mounts=env_mounts(swe_env)) as session:
        report = run_tests(session, root, TestSetup(), files=["tests/test_hang.py"], timeout=120, env=swe_env,
                           stall_timeout=3)
    assert report.timed_out and report.stalled == "tests/test_hang.py::test_hangs"
    assert report.outcome("tests/test_hang.py::test_ok") == "passed"
    assert report.wall_time < 30


def test_a_slow_mutant_is_rechecked_alone_not_dropped_as_a_timeout(
    swe_cache: Path, swe_sandbox: Sandbox, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "slow", SLOW_FILES)
    instances = build_tasks([Source("git", str(repo.working_dir))], sandbox=swe_sandbox, progress=False)
    slow = [i for i in instances if f"-{SLOW_MUTANT_LINE}" in i.patch]
    assert slow, "the mutant that sleeps ~12 s was dropped as a timeout"
    assert slow[0].FAIL_TO_PASS == ["tests/test_slow.py::test_double"]
    [log] = (swe_cache / "swe" / "work").glob("local__slow-*/*/mutants.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    rechecked = [r for r in records if r["recheck_s"]]
    assert [r["status"] for r in rechecked] == ["kept"], "only the slow mutant needed a re-check"
    assert rechecked[0]["recheck_s"] > 10, "the re-check ran the ~12 s mutant to its end"
