"""A SWE-bench-format instance in its own image, as a user with SWE-smith / SWE-Gym data meets it: import, make the
image, grade patches sealed in it, and hand predictions to swebench's own harness."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.image_tree import instance_tree
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.taskset import load_tasks
from meta_agent.swe.verdict import evaluate_patch
from sandboxes.engine import docker_client

pytestmark = pytest.mark.docker

IMAGE = f"meta-agent-test/calc-{uuid.uuid4().hex[:8]}:1"
CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = ("from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_sub():\n    assert sub(5, 3) == 2\n")
WHO = "-c user.name=t -c user.email=t@example.invalid"
DATES = "GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z'"


def _printf(text: str) -> str:
    return text.replace("\n", "\\n")


# The repository at its base holds the bug; a later commit on another branch holds the fix (the leak of
# SWE-bench #465). The image has its own python3 and pytest so that swebench's harness, which binds nothing in,
# can run the tests too.
DOCKERFILE = f"""ARG META_AGENT_BASE
FROM ${{META_AGENT_BASE}}
RUN apt-get update -q && apt-get install -y -q --no-install-recommends python3-pytest python-is-python3 \\
 && rm -rf /var/lib/apt/lists/*
RUN mkdir /testbed && cd /testbed && git init -q -b main \\
 && printf '{_printf(CALC)}' > calc.py && printf '{_printf(TESTS)}' > test_calc.py \\
 && git add -A && {DATES} git {WHO} commit -qm base \\
 && git checkout -q -b upstream && sed -i '2s/a - b/a + b/' calc.py \\
 && {DATES} git {WHO} commit -qam 'the fix, a commit after the base' && git checkout -q main
"""
GOLD = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n \n \n def sub(a, b):\n")
"""The fix as `git diff` writes it (three lines of context, as swebench's `git apply` needs)."""
TEST_EDIT = ("diff --git a/test_calc.py b/test_calc.py\n--- a/test_calc.py\n+++ b/test_calc.py\n@@ -2,7 +2,7 @@\n"
             " \n \n def test_add():\n-    assert add(2, 3) == 5\n+    assert add(2, 3) == -1\n"
             " \n \n def test_sub():\n")


def _base_commit(tmp: Path) -> str:
    """The base commit's id, made the same way on the host (fixed author, dates and message)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp)], check=True)
    (tmp / "calc.py").write_text(CALC)
    (tmp / "test_calc.py").write_text(TESTS)
    env = {**os.environ, "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"}
    for cmd in (["add", "-A"], [*WHO.split(), "commit", "-qm", "base"]):
        subprocess.run(["git", *cmd], cwd=tmp, env=env, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp, capture_output=True, text=True,
                          check=True).stdout.strip()


def _row(base: str, **extra: object) -> dict[str, object]:
    return {"instance_id": "calc__calc-1", "repo": "calc/calc", "base_commit": base, "patch": GOLD,
            "problem_statement": "add(2, 3) returns -1", "FAIL_TO_PASS": json.dumps(["test_calc.py::test_add"]),
            "PASS_TO_PASS": json.dumps(["test_calc.py::test_sub"]), "image_name": IMAGE, "dockerfile": DOCKERFILE,
            **extra}


@pytest.fixture(scope="module")
def calc_set(docker_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SweInstance]:
    """A SWE-smith-style row naming its image, imported and its image made through the CLI."""
    tmp = tmp_path_factory.mktemp("calc-image")
    rows = tmp / "calc.jsonl"
    base = _base_commit(tmp / "repo")
    # one image, three instances (one per split), as SWE-smith rows share their repository's image
    rows.write_text("".join(json.dumps(_row(base, instance_id=f"calc__calc-{split}", split=split)) + "\n"
                            for split in ("train", "selection", "test")))
    runner = CliRunner()
    imported = runner.invoke(app, ["import", str(rows), "--name", "calcimg"])
    assert imported.exit_code == 0, imported.output
    listed = runner.invoke(app, ["images", "list", "--taskset", "calcimg"])
    assert listed.exit_code == 0, listed.output
    assert "missing" in listed.output and "meta-agent tasks images build --taskset calcimg" in listed.output
    built = runner.invoke(app, ["images", "build", "--taskset", "calcimg", "--network"])
    assert built.exit_code == 0, built.output
    assert f"building {IMAGE}" in built.output
    again = runner.invoke(app, ["images", "build", "--taskset", "calcimg"])
    assert "images: 1 needed, 1 already on the engine, 0 to make" in again.output, again.output
    yield load_tasks("test", "calcimg")[0]
    pruned = runner.invoke(app, ["images", "prune", "--all"])
    assert IMAGE in pruned.output, pruned.output


def test_gold_resolves_and_nothing_else_does(calc_set: SweInstance) -> None:
    gold = evaluate_patch(calc_set, GOLD, sandbox=None)  # type: ignore[arg-type]  # an image instance picks docker
    assert gold.resolved, gold.detail
    assert gold.tests == {"test_calc.py::test_add": "passed", "test_calc.py::test_sub": "passed"}
    empty = evaluate_patch(calc_set, "", sandbox=None)  # type: ignore[arg-type]
    assert not empty.resolved and empty.tests["test_calc.py::test_add"] == "failed"
    rigged = evaluate_patch(calc_set, TEST_EDIT, sandbox=None)  # type: ignore[arg-type]
    assert rigged.tests_touched and not rigged.resolved
    broken = evaluate_patch(calc_set, GOLD.replace("+    return a + b", "+    return a +"), sandbox=None)  # type: ignore[arg-type]
    assert broken.syntax_error and not broken.resolved
    stray = evaluate_patch(calc_set, GOLD.replace("calc.py", "nope.py"), sandbox=None)  # type: ignore[arg-type]
    assert not stray.diff_applies and "does not apply" in stray.detail


def test_the_fix_in_the_images_history_never_reaches_an_episode(calc_set: SweInstance) -> None:
    client = docker_client()
    try:
        tree, workdir = instance_tree(client, calc_set, IMAGE)
        assert workdir == "/testbed"
    finally:
        client.close()
    git = ["git", "-c", f"safe.directory={tree}", "-C", str(tree)]
    commits = subprocess.run([*git, "rev-list", "--all"], capture_output=True, text=True, check=True).stdout.split()
    assert commits == [calc_set.base_commit]
    objects = subprocess.run([*git, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype)"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert objects.count("commit") == 1
    assert "a + b" not in subprocess.run([*git, "log", "--all", "-p"], capture_output=True, text=True).stdout


def test_an_eval_script_cannot_write_to_the_host(calc_set: SweInstance, tmp_path: Path) -> None:
    target = Path("/var/tmp") / f"meta-agent-escape-{uuid.uuid4().hex}"
    script = (f"#!/bin/bash\nset -uxo pipefail\ncd /testbed\n: '>>>>> Start Test Output'\n"
              f"echo owned > {target}; echo owned > /testbed/../escaped; echo 'PASSED test_calc.py::test_add'\n"
              f"echo 'PASSED test_calc.py::test_sub'\n: '>>>>> End Test Output'\n")
    hostile = calc_set.model_copy(update={"eval_script": script, "log_parser": "parse_log_pytest"})
    evaluate_patch(hostile, "", sandbox=None)  # type: ignore[arg-type]
    assert not target.exists()
    assert not Path("/escaped").exists()


def test_a_missing_image_names_the_command_that_makes_it(calc_set: SweInstance) -> None:
    gone = calc_set.model_copy(update={"image": "meta-agent-test/never-built:1"})
    with pytest.raises(SweTaskError, match="meta-agent tasks images build"):
        evaluate_patch(gone, GOLD, sandbox=None)  # type: ignore[arg-type]


def test_a_dockerfile_cannot_read_the_host(docker_image: str, tmp_path: Path) -> None:
    rows = tmp_path / "hostile.jsonl"
    dockerfile = "ARG META_AGENT_BASE\nFROM ${META_AGENT_BASE}\nCOPY /etc/shadow /stolen\n"
    rows.write_text(json.dumps(_row("0" * 40, image_name="meta-agent-test/hostile:1", dockerfile=dockerfile)))
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(rows), "--name", "hostileimg"]).exit_code == 0
    built = runner.invoke(app, ["images", "build", "--taskset", "hostileimg"])
    assert built.exit_code == 1
    assert "building image meta-agent-test/hostile:1" in built.output and "failed" in built.output


def _predictions(runner: CliRunner, tmp_path: Path, instance_id: str, name: str, answer: str) -> dict[str, str]:
    """A prediction the way a user makes one: `meta-agent eval --out` JSON, then `tasks export --predictions`."""
    from meta_agent.domains.base import EvalResult, TaskResult
    from meta_agent.stats import Interval

    result = EvalResult(domain="swe", split="test", policy=name, score=Interval(mean=0, low=0, high=0, n=1),
                        results=[TaskResult(task_id=instance_id, correct=False, score=0.0, answer=answer)],
                        wall_time=0.0)
    (tmp_path / f"{name}.json").write_text(result.model_dump_json())
    exported = runner.invoke(app, ["export", "--predictions", str(tmp_path / f"{name}.json"),
                                   "--out", str(tmp_path / f"{name}.jsonl")])
    assert exported.exit_code == 0, exported.output
    return json.loads((tmp_path / f"{name}.jsonl").read_text())


def test_swebench_grades_the_exported_predictions(calc_set: SweInstance, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`tasks export` rows and `tasks export --predictions` output, read and run by swebench's own harness."""
    from swebench.harness.run_evaluation import get_dataset_from_preds, run_instance
    from swebench.harness.utils import make_test_spec

    runner = CliRunner()
    rows_file = tmp_path / "rows.jsonl"
    assert runner.invoke(app, ["export", "--taskset", "calcimg", "--out", str(rows_file)]).exit_code == 0
    monkeypatch.chdir(tmp_path)  # swebench writes its logs under ./logs
    wrong = GOLD.replace("+    return a + b", "+    return b - a")
    preds = {name: _predictions(runner, tmp_path, calc_set.instance_id, name, answer)
             for name, answer in (("gold", GOLD), ("wrong", wrong), ("empty", ""))}
    resolved = {}
    for name in ("gold", "wrong"):
        # swebench's loader takes the exported file as its dataset
        (row,) = get_dataset_from_preds(str(rows_file), "test", [], {calc_set.instance_id: preds[name]},
                                        f"meta-agent-{name}", rewrite_reports=False)
        client = docker_client()
        try:
            done = run_instance(make_test_spec(row), preds[name], client, f"meta-agent-{name}", timeout=300)
        finally:
            client.close()
        assert done is not None, "swebench could not evaluate it: see logs/run_evaluation under " + str(tmp_path)
        resolved[name] = done[1][calc_set.instance_id]["resolved"]
    assert resolved == {"gold": True, "wrong": False}
    # An empty patch is never run by swebench: its run leaves it out, and its report counts it unresolved.
    assert get_dataset_from_preds(str(rows_file), "test", [], {calc_set.instance_id: preds["empty"]},
                                  "meta-agent-empty", rewrite_reports=False) == []


def test_the_episode_server_runs_a_harness_episode_in_the_image(calc_set: SweInstance) -> None:
    """What the harness's episodes of an image task go through: open, commands, diff, the reward's tests."""
    from meta_agent.swe.episode_server import EpisodeServer, request

    train = load_tasks("train", "calcimg")
    with EpisodeServer(train) as server:
        sock = server.socket_path
        episode = request(sock, {"op": "open", "task_id": train[0].instance_id})["episode"]

        def run(command: str) -> dict[str, object]:
            return request(sock, {"op": "run", "episode": episode, "command": command, "timeout": 30})

        assert run("pwd; id -u")["output"].split() == ["/testbed", str(sandbox_uid())]
        # the image's own interpreter (with the project's dependencies), not meta-agent's
        assert str(run("command -v python")["output"]).strip() == "/usr/bin/python"
        assert "return a - b" in str(run("cat calc.py")["output"])
        assert str(run("git log --all --oneline | wc -l")["output"]).strip() == "1", "the fix commit is not there"
        assert run("python -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)'")["exit_code"] != 0
        assert run("sed -i '2s/a - b/a + b/' calc.py")["exit_code"] == 0
        diff = request(sock, {"op": "diff", "episode": episode})["diff"]
        assert "+    return a + b" in diff and "test_calc" not in diff
        graded = request(sock, {"op": "test", "task_id": train[0].instance_id, "diff": diff})
        assert graded["verdict"]["resolved"] is True
        assert request(sock, {"op": "close", "episode": episode}) == {"ok": True}
        refused = [request(sock, {"op": "open", "task_id": calc_set.instance_id}),  # a test instance: sealed
                   request(sock, {"op": "run", "episode": episode, "command": "true"}),  # closed
                   request(sock, {"op": "run", "episode": "x", "command": "x" * 30_000}),
                   request(sock, {"op": "rm", "path": "/"})]
        assert [r["ok"] for r in refused] == [False] * 4
        assert "no train task" in refused[0]["error"] and "no open episode" in refused[1]["error"]


def sandbox_uid() -> int:
    from sandboxes.identity import sandbox_identity

    return sandbox_identity().uid


@pytest.mark.slow
def test_one_grpo_step_on_an_image_task_and_its_sealed_evaluation(calc_set: SweInstance, tiny_policy: Path,
                                                                 tmp_path: Path) -> None:
    """The real harness trains a step on the train instance (its episodes go through the episode server), and the
    sealed evaluator scores the test instance in its image: the tiny policy fails it, a competent agent passes."""
    from meta_agent.domains.swe import SweDomain, SweSettings
    from meta_agent.gitops import init_harness
    from meta_agent.policy import smollm2_tokenizer
    from meta_agent.swe.competent import CompetentAgent
    from meta_agent.training import train_commit, write_train_tasks
    from sandboxes import Limits, get_backend

    domain = SweDomain(SweSettings(taskset="calcimg", train_size=1, selection_size=1, test_size=1,
                                   sandbox="bwrap"))
    repo = init_harness(tmp_path / "harness", "swe")
    tasks = write_train_tasks(domain, tmp_path / "inputs")
    assert not list((tmp_path / "inputs").rglob("*.tar")), "an image task travels without an archive"
    run = train_commit(repo=repo, commit=repo.head.commit.hexsha, domain=domain, sandbox=get_backend("bwrap"),
                       limits=Limits(), policy=tiny_policy, root_policy=tiny_policy, steps=1, seed=0,
                       work_dir=tmp_path / "work", out_dir=tmp_path / "train", tasks_file=tasks)
    assert run.rollouts and {r.task_id for r in run.rollouts} == {"calc__calc-train"}
    assert all(r.extra.get("turns", 0) >= 1 for r in run.rollouts)

    tiny = domain.evaluate(tiny_policy, "test")
    assert [r.task_id for r in tiny.results] == [calc_set.instance_id] and not tiny.results[0].correct
    test = domain.instances("test")
    competent = domain.score(CompetentAgent(test, smollm2_tokenizer()), test, "test", "competent agent")
    assert competent.results[0].correct, competent.results[0].detail
    assert "+    return a + b" in competent.results[0].answer


def test_show_and_verify_say_an_instance_runs_in_its_image(calc_set: SweInstance) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["show", calc_set.instance_id])
    assert shown.exit_code == 0 and f"image: {IMAGE}" in shown.output, shown.output
    verified = runner.invoke(app, ["verify", "--taskset", "calcimg", "--no-progress"])
    assert "not checked" in verified.output and "runs in its image" in verified.output, verified.output
