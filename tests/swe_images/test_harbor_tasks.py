"""A directory of Harbor tasks as a user with terminal-bench-style data meets it: import (read by Harbor's own
code), the task's image from its environment/, episodes in its working directory, its verifier as the reward."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.harbor import harbor_python
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.taskset import _hashed_split, load_tasks
from meta_agent.swe.verdict import evaluate_patch

pytestmark = pytest.mark.docker

TOML = """version = "1.0"

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 300.0
"""
DOCKERFILE = "ARG META_AGENT_BASE\nFROM ${META_AGENT_BASE}\nWORKDIR /app\nCOPY greet.py /app/greet.py\n"
GREET = 'import sys\nprint("Goodbye, " + sys.argv[1] + "!")\n'
VERIFIER = ('#!/bin/bash\nif [ "$(python3 /app/greet.py World)" = "Hello, World!" ]; then echo 1; else echo 0; fi'
            " > /logs/verifier/reward.txt\n")
FIX = ("diff --git a/greet.py b/greet.py\n--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n import sys\n"
       '-print("Goodbye, " + sys.argv[1] + "!")\n+print("Hello, " + sys.argv[1] + "!")\n')


def _task(root: Path, name: str, toml: str = TOML) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    (task / "task.toml").write_text(toml)
    (task / "instruction.md").write_text("Make `python3 greet.py World` in /app print `Hello, World!`.\n")
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "environment" / "greet.py").write_text(GREET)
    (task / "tests" / "test.sh").write_text(VERIFIER)
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\nsed -i s/Goodbye/Hello/ /app/greet.py\n")
    return task


def _named(split: str) -> str:
    """A task name the 70/15/15 split by id puts in `split` (the product's own rule, `tasks import --split auto`)."""
    return next(f"greet-{i}" for i in range(1000) if _hashed_split(f"greet-{i}") == split)


@pytest.fixture(scope="module")
def harbor_set(docker_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    try:
        harbor_python()
    except SweTaskError as e:
        pytest.skip(str(e))  # no Python >= 3.12 on this machine for Harbor's own code
    root = tmp_path_factory.mktemp("harbor") / "greet-tasks"
    for split in ("train", "selection", "test"):
        _task(root, _named(split))
    runner = CliRunner()
    imported = runner.invoke(app, ["import", str(root), "--name", "greet", "--split", "auto"])
    assert imported.exit_code == 0, imported.output
    assert "train 1, selection 1, test 1" in imported.output
    built = runner.invoke(app, ["images", "build", "--taskset", "greet"])
    assert built.exit_code == 0, built.output
    listed = runner.invoke(app, ["images", "list", "--taskset", "greet"])
    assert "environment/" in listed.output and "missing" not in listed.output, listed.output
    return "greet"


def _test_instance() -> SweInstance:
    (instance,) = load_tasks("test", "greet")
    return instance


def test_the_verifier_is_the_reward(harbor_set: str) -> None:
    instance = _test_instance()
    assert instance.problem_statement.startswith("Make `python3 greet.py World`")
    assert instance.harbor is not None and instance.FAIL_TO_PASS == ["tests/test.sh"]
    fixed = evaluate_patch(instance, FIX, sandbox=None)  # type: ignore[arg-type]  # image tasks pick docker
    assert fixed.resolved and fixed.detail == "reward 1"
    unchanged = evaluate_patch(instance, "", sandbox=None)  # type: ignore[arg-type]
    assert not unchanged.resolved and unchanged.detail == "reward 0"


def test_a_policy_acts_in_the_tasks_environment_and_never_sees_its_tests(harbor_set: str, tmp_path: Path) -> None:
    from meta_agent.domains.swe import SweDomain, SweSettings
    from meta_agent.training import write_train_tasks

    domain = SweDomain(SweSettings(taskset=harbor_set, train_size=1, selection_size=1, test_size=1, sandbox="bwrap"))
    script = ["pwd; ls /tests /solution; cat greet.py", "sed -i s/Goodbye/Hello/ greet.py", "submit"]

    def reply(conversations: list[list[dict[str, str]]], max_new: int) -> list[str]:
        return [f"```bash\n{script[min(sum(m['role'] == 'assistant' for m in c), 2)]}\n```" for c in conversations]

    result = domain.score(reply, domain.instances("test"), "test", "scripted")
    (episode,) = result.results
    assert episode.correct, episode.detail
    assert "/app" in episode.completion and "No such file or directory" in episode.completion
    assert "Goodbye" in episode.completion  # it read the task's own file
    write_train_tasks(domain, tmp_path / "inputs")
    handed = "".join(p.read_text(errors="replace") for p in (tmp_path / "inputs").rglob("*") if p.is_file())
    assert "reward.txt" not in handed and "solve.sh" not in handed, "the verifier and solution stay sealed"


@pytest.mark.slow
def test_one_grpo_step_on_a_harbor_task(harbor_set: str, tiny_policy: Path, tmp_path: Path) -> None:
    from meta_agent.domains.swe import SweDomain, SweSettings
    from meta_agent.gitops import init_harness
    from meta_agent.training import train_commit, write_train_tasks
    from sandboxes import Limits, get_backend

    domain = SweDomain(SweSettings(taskset=harbor_set, train_size=1, selection_size=1, test_size=1, sandbox="bwrap"))
    repo = init_harness(tmp_path / "harness", "swe")
    run = train_commit(repo=repo, commit=repo.head.commit.hexsha, domain=domain, sandbox=get_backend("bwrap"),
                       limits=Limits(), policy=tiny_policy, root_policy=tiny_policy, steps=1, seed=0,
                       work_dir=tmp_path / "work", out_dir=tmp_path / "train",
                       tasks_file=write_train_tasks(domain, tmp_path / "inputs"))
    assert {r.task_id for r in run.rollouts} == {_named("train")}


@pytest.mark.parametrize(("toml", "reason"), [
    ("version = 1\n[verifier]\ntimeout_sec = 'soon'\n", "timeout_sec"),
    (TOML + '\n[environment]\ndocker_image = "greet; rm -rf /"\n', "not an image name"),
])
def test_a_task_harbor_or_meta_agent_refuses_stops_the_import(docker_image: str, tmp_path: Path, toml: str,
                                                              reason: str) -> None:
    try:
        harbor_python()
    except SweTaskError as e:
        pytest.skip(str(e))
    root = tmp_path / "tasks"
    task = _task(root, "bad", toml)
    if "docker_image" in toml:
        shutil.rmtree(task / "environment")
    result = CliRunner().invoke(app, ["import", str(root), "--name", "bad-harbor"])
    assert result.exit_code == 1 and reason in result.output, result.output
    assert "bad-harbor" not in json.dumps(CliRunner().invoke(app, ["list", "--json"]).output)
