"""The sandboxed test environment is the one a user's venv gives: deps reach subprocesses, pytest args stick."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.swe.build import build_tasks
from meta_agent.swe.env import env_mounts
from meta_agent.swe.instance import SweInstance, TestSetup, read_instances
from meta_agent.swe.sources import Source
from meta_agent.swe.taskset import load_tasks
from meta_agent.swe.testrun import run_tests
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Sandbox
from tests.swe_tasks.swe_test_projects import GREET_DEPS, GREET_FILES, STRICT_FILES, make_repo, write_tree

COMMAND_LINE_TEST = "tests/test_greet.py::test_command_line"
LEAK_TESTS = {"tests/test_leak.py": "import importlib.util\n\n\ndef test_numpy_is_not_installed():\n"
                                    "    assert importlib.util.find_spec('numpy') is None\n"}
STRICT_TEST = "tests/test_strict.py::test_strict_everything"


def test_a_subprocess_test_imports_the_project_and_its_deps(
    swe_cache: Path, swe_sandbox: Sandbox, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "greet", GREET_FILES)
    instances = build_tasks([Source("git", str(repo.working_dir))], sandbox=swe_sandbox, max_per_project=3,
                            deps=GREET_DEPS, progress=False)
    assert instances, "no instance: the suite did not pass at the base"
    assert all(inst.setup is not None and inst.setup.python_path == ["src", "."] for inst in instances)
    judged = [inst for inst in instances if COMMAND_LINE_TEST in inst.FAIL_TO_PASS + inst.PASS_TO_PASS]
    assert judged, "`python -m greet` in a test could not import greet or text_unidecode in the sandbox"
    verdict = evaluate_patch(judged[0], judged[0].patch, swe_sandbox)
    assert verdict.resolved and verdict.tests[COMMAND_LINE_TEST] == "passed", verdict.detail


def test_meta_agents_own_packages_are_not_in_the_test_environment(
    swe_sandbox: Sandbox, swe_env: Path, tmp_path: Path
) -> None:
    assert importlib.util.find_spec("numpy") is not None, "meta-agent's interpreter has numpy (torch needs it)"
    root = write_tree(tmp_path / "leak", LEAK_TESTS)
    with swe_sandbox.open(root, mounts=env_mounts(swe_env)) as session:
        report = run_tests(session, root, TestSetup(), files=["tests/test_leak.py"], timeout=120, env=swe_env)
    assert report.outcome("tests/test_leak.py::test_numpy_is_not_installed") == "passed", report.tests


def _instances_judged_by(instances: list[SweInstance], test: str) -> list[SweInstance]:
    return [i for i in instances if test in i.FAIL_TO_PASS + i.PASS_TO_PASS]


def test_pytest_args_are_kept_through_export_and_import_and_used_by_every_run(
    swe_cache: Path, swe_sandbox: Sandbox, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "strict", STRICT_FILES)
    runner = CliRunner()
    built_file, exported = tmp_path / "strict.jsonl", tmp_path / "exported.jsonl"
    built = runner.invoke(app, ["build", "--from-git", str(repo.working_dir), "--out", str(built_file),
                                "--max-per-project", "4", "--pytest-arg=--calc-strict", "--no-progress",
                                "--sandbox", os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")])
    assert built.exit_code == 0, built.output
    assert all(i.test_setup().pytest_args == ["--calc-strict"] for i in read_instances(built_file))
    assert runner.invoke(app, ["import", str(built_file), "--name", "strict"]).exit_code == 0
    again = runner.invoke(app, ["export", "--taskset", "strict", "--out", str(exported)])
    assert again.exit_code == 0, again.output
    assert runner.invoke(app, ["import", str(exported), "--name", "strict2"]).exit_code == 0
    loaded = [i for split in ("train", "selection", "test") for i in load_tasks(split, "strict2")]
    assert loaded and all(i.test_setup().pytest_args == ["--calc-strict"] for i in loaded)

    inst = _instances_judged_by(loaded, STRICT_TEST)[0]
    assert evaluate_patch(inst, inst.patch, swe_sandbox).resolved
    without = inst.model_copy(update={"setup": inst.test_setup().model_copy(update={"pytest_args": []})})
    verdict = evaluate_patch(without, inst.patch, swe_sandbox)
    assert verdict.tests[STRICT_TEST] == "failed" and not verdict.resolved, "the argument was what made it pass"
