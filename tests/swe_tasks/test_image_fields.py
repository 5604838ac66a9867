"""What a task file may say about an instance's own image, and what is refused, before any engine is involved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import read_instances
from meta_agent.swe.task_images import image_needs
from meta_agent.swe.taskset import import_tasks, load_tasks
from meta_agent.swe.test_spec import pytest_eval_script, swebench_test_spec

BASE = {"instance_id": "octo__calc-7", "repo": "octo/calc", "base_commit": "a" * 40, "patch": "",
        "problem_statement": "add is wrong", "FAIL_TO_PASS": ["tests/test_calc.py::test_add[1-2]"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_sub"]}


def _file(tmp_path: Path, *rows: dict[str, object]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_image_is_read_from_each_family_spelling(tmp_path: Path) -> None:
    rows = [{**BASE, "instance_id": "a", "image_name": "swesmith/calc.1:latest"},
            {**BASE, "instance_id": "b", "docker_image": "namanjain12/calc_final:abc123"},
            {**BASE, "instance_id": "c", "image": "registry.local:5000/team/calc@sha256:" + "f" * 64},
            {**BASE, "instance_id": "d"}]
    got = {i.instance_id: i.image for i in read_instances(_file(tmp_path, *rows))}
    assert got == {"a": "swesmith/calc.1:latest", "b": "namanjain12/calc_final:abc123",
                   "c": "registry.local:5000/team/calc@sha256:" + "f" * 64, "d": None}


@pytest.mark.parametrize("name", ["calc; rm -rf /", "calc:$(id)", "Calc/UPPER", "calc `id`", "../calc",
                                  "calc:latest\n", "-calc", "a" * 300, "calc|tee"])
def test_an_image_name_that_is_not_a_plain_reference_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SweTaskError, match=r"field image: .*(not an image name|at most 255)"):
        read_instances(_file(tmp_path, {**BASE, "image_name": name}))


def test_image_recipes_need_an_image_and_one_recipe_per_image(tmp_path: Path) -> None:
    with pytest.raises(SweTaskError, match="give its `image` too"):
        read_instances(_file(tmp_path, {**BASE, "dockerfile": "FROM x"}))
    with pytest.raises(SweTaskError, match="log_parser"):
        read_instances(_file(tmp_path, {**BASE, "image": "x:1", "eval_script": "pytest"}))
    with pytest.raises(SweTaskError, match="not one of swebench's log parsers"):
        read_instances(_file(tmp_path, {**BASE, "image": "x:1", "eval_script": "pytest", "log_parser": "eval"}))
    two = [{**BASE, "instance_id": "a", "image": "x:1", "dockerfile": "FROM a"},
           {**BASE, "instance_id": "b", "image": "x:1", "dockerfile": "FROM b"}]
    with pytest.raises(SweTaskError, match="two different Dockerfiles"):
        image_needs(read_instances(_file(tmp_path, *two)))
    with pytest.raises(SweTaskError, match="two different Dockerfiles"):
        import_tasks(_file(tmp_path, *two), name="two-recipes")


def test_an_image_template_names_the_images_of_swe_gym_rows(tmp_path: Path) -> None:
    rows = [{**BASE, "instance_id": "getmoto__moto-1234"}, {**BASE, "instance_id": "own", "image": "mine:2"}]
    import_tasks(_file(tmp_path, *rows), name="gym", split="test",
                 image_template="xingyaoww/sweb.eval.x86_64.{swebench_id}:latest")
    got = {i.instance_id: i.image for i in load_tasks("test", "gym")}
    assert got == {"getmoto__moto-1234": "xingyaoww/sweb.eval.x86_64.getmoto_1776_moto-1234:latest",
                   "own": "mine:2"}
    with pytest.raises(SweTaskError, match="image-template"):
        import_tasks(_file(tmp_path, *rows), name="gym2", image_template="x/{id}; rm -rf /")


def test_the_written_spec_is_graded_by_swebench(tmp_path: Path) -> None:
    """The pytest spec written for an image instance, and swebench's grading of a log in that shape."""
    from swebench.harness.grading import get_eval_report

    test_patch = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/x\n"
    (inst,) = read_instances(_file(tmp_path, {**BASE, "image": "x:1", "test_patch": test_patch}))
    script = pytest_eval_script(inst)
    assert "cd /testbed" in script and f"git checkout {'a' * 40} -- tests/test_calc.py" in script
    assert "python -m pytest -rA tests/test_calc.py" in script
    spec = swebench_test_spec(inst)
    for outcome, resolved in (("PASSED", True), ("FAILED", False)):
        log = tmp_path / f"{outcome}.txt"
        log.write_text(">>>>> Start Test Output\n"
                       f"{outcome} tests/test_calc.py::test_add[1-2]\nPASSED tests/test_calc.py::test_sub\n"
                       f">>>>> End Test Output\n>>>>> Test Exit Code: {0 if resolved else 1}\n")
        report = get_eval_report(spec, {"instance_id": inst.instance_id, "model_name_or_path": "m",
                                        "model_patch": "x"}, str(log), include_tests_status=True)
        assert report[inst.instance_id]["resolved"] is resolved


@pytest.mark.parametrize(("files", "reward"), [
    ({"reward.txt": "1\n"}, 1.0),
    ({"reward.txt": "0.25"}, 0.25),
    ({"reward.json": '{"reward": 0.5, "style": 1}'}, 0.5),
    ({"reward.json": '{"correct": 1, "fast": 0}'}, 0.0),
    ({"reward.txt": "nan"}, None),
    ({"reward.txt": "1" * 50_000}, None),
    ({"reward.json": '{"reward": true}'}, None),
    ({"reward.json": "[1, 2"}, None),
    ({}, None),
])
def test_a_harbor_verifier_reward_is_read_strictly(tmp_path: Path, files: dict[str, str], reward: float | None) -> None:
    from meta_agent.swe.image_verdict import harbor_reward

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert harbor_reward(tmp_path) == reward


def test_a_reward_file_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    from meta_agent.swe.image_verdict import harbor_reward

    (tmp_path / "elsewhere").write_text("1")
    (tmp_path / "reward.txt").symlink_to(tmp_path / "elsewhere")
    assert harbor_reward(tmp_path) is None


def test_harbor_specs_stay_inside_their_task(tmp_path: Path) -> None:
    from meta_agent.swe.instance import HarborSpec

    for bad in ({"task_dir": "relative"}, {"task_dir": "/x", "test_script": "../../etc/passwd"},
                {"task_dir": "/x", "test_script": "solution/solve.sh"}, {"task_dir": "/x", "workdir": "/"},
                {"task_dir": "/x", "workdir": "/app/../etc"}):
        with pytest.raises(ValueError):
            HarborSpec.model_validate(bad)


def test_a_row_cannot_name_host_files_as_a_harbor_task(tmp_path: Path) -> None:
    """Harbor task files are mounted into containers and used as build contexts: only the importer's copies count."""
    host = tmp_path / "secrets"
    (host / "environment").mkdir(parents=True)
    (host / "environment" / "Dockerfile").write_text("FROM scratch\nCOPY . /\n")
    row = {**BASE, "image": "x:1", "harbor": {"task_dir": str(host)}}
    with pytest.raises(SweTaskError, match=r"not in .*import Harbor tasks from their directory"):
        import_tasks(_file(tmp_path, row), name="hostile-harbor-row")
