"""A task file is data: what it names is installed only by pip in a sandbox, and only as a plain requirement.

The attacks: a SWE-bench row whose `setup.deps` carries a pip option, a URL or a local path; a `repo`
field that smuggles a pip option into the sdist download of `tasks verify`; and a dependency whose build
code runs at install time and tries to write on the host.
"""

from __future__ import annotations

import io
import json
import tarfile
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.swe.crosscheck import venv_for
from meta_agent.swe.env import project_env
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance, read_instances
from meta_agent.swe.sdist import fetch_sdist
from sandboxes import Sandbox
from tests.swe_tasks.test_instance_io import SWE_BENCH_ROW


def _row(**setup: object) -> dict[str, object]:
    return dict(SWE_BENCH_ROW, setup={"deps": [], **setup})


@pytest.mark.parametrize("dep", ["--index-url=http://127.0.0.1:9/simple", "-e .", "./vendor/evil",
                                 "evil @ file:///etc/shadow", "evil @ https://example.invalid/evil.whl",
                                 "git+https://example.invalid/evil.git", "six\n--extra-index-url=x", "x" * 300])
def test_an_imported_task_whose_deps_are_not_plain_requirements_is_refused(tmp_path: Path, dep: str) -> None:
    path = tmp_path / "gym.jsonl"
    path.write_text(json.dumps(_row(deps=["six", dep])) + "\n")
    with pytest.raises(SweTaskError, match=r"gym\.jsonl:1: field setup\.deps"):
        read_instances(path)


def test_tasks_import_of_such_a_file_is_one_line_with_the_field(swe_cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "gym.jsonl"
    path.write_text(json.dumps(_row(deps=["evil @ file:///root/.ssh/id_rsa"])) + "\n")
    result = CliRunner().invoke(app, ["import", str(path), "--name", "hostile"])
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "Traceback" not in said
    assert "field setup.deps" in said and "URL or a file" in said


def test_plain_requirements_with_extras_and_markers_are_kept(tmp_path: Path) -> None:
    deps = ["six>=1.16", 'attrs[tests]==23.1; python_version >= "3.8"']
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(_row(deps=deps)) + "\n")
    assert read_instances(path)[0].test_setup().deps == deps


@pytest.mark.parametrize("path", ["/etc", "../outside", "src/../../x"])
def test_python_path_outside_the_checkout_is_refused(tmp_path: Path, path: str) -> None:
    file = tmp_path / "p.jsonl"
    file.write_text(json.dumps(_row(python_path=[path])) + "\n")
    with pytest.raises(SweTaskError, match="python_path"):
        read_instances(file)


@pytest.mark.parametrize("repo", ["pypi/--index-url=http:__x-1.0", "pypi/../../etc-1.0", "pypi/a b-1.0"])
def test_a_repo_name_cannot_become_a_pip_argument_in_verify(repo: str, swe_sandbox: Sandbox) -> None:
    instance = SweInstance.model_validate(dict(SWE_BENCH_ROW, repo=repo, version="1.0"))
    with pytest.raises(SweTaskError, match="not a PyPI project name"):
        venv_for(instance, swe_sandbox)
    with pytest.raises(SweTaskError, match="not a PyPI project name"):
        fetch_sdist(repo.split("/", 1)[1].rsplit("-", 1)[0], "1.0", sandbox=swe_sandbox)


BACKEND = '''
import os
from pathlib import Path

def _attack():
    for target in {targets!r}:
        try:
            Path(target).write_text("written by a dependency's build code, uid %d" % os.getuid())
        except OSError:
            pass
    raise RuntimeError("evil build backend ran (inside the sandbox, we hope)")

def get_requires_for_build_wheel(config_settings=None):
    _attack()

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _attack()

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _attack()
'''


def _evil_sdist(folder: Path, targets: list[str]) -> Path:
    """evil-1.0.tar.gz: an in-tree build backend (no build requirements) that writes `targets` when pip builds it."""
    files = {
        "evil-1.0/pyproject.toml": textwrap.dedent("""\
            [build-system]
            requires = []
            build-backend = "evil_backend"
            backend-path = ["."]
            """),
        "evil-1.0/evil_backend.py": BACKEND.format(targets=targets),
        "evil-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
    }
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "evil-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def test_a_dependency_s_build_code_runs_only_inside_the_sandbox(tmp_path: Path, swe_sandbox: Sandbox,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    host_marker = Path.home() / f"meta-agent-evil-dep-{tmp_path.name}"
    tmp_marker = tmp_path / "written-on-the-host"
    wheels = _evil_sdist(tmp_path / "wheels", [str(host_marker), str(tmp_marker)]).parent
    monkeypatch.setenv("META_AGENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    try:
        with pytest.raises(SweTaskError, match="in the sandbox"):
            project_env(["evil==1.0"], swe_sandbox)
        assert not host_marker.exists(), "a task file's dependency ran its build code on the host"
        assert not tmp_marker.exists(), "a task file's dependency ran its build code on the host"
        assert not list((tmp_path / "cache" / "swe" / "envs").glob("venv-*/.complete"))
    finally:
        host_marker.unlink(missing_ok=True)


def test_tasks_show_prints_a_huge_statement_cut_and_test_ids_as_written(swe_cache: Path, tmp_path: Path) -> None:
    row = dict(SWE_BENCH_ROW, instance_id="huge__statement-1", problem_statement="word " * 6_000_000,
               FAIL_TO_PASS=json.dumps(["tests/test_a.py::test_b[param-1]"]))
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(row) + "\n")
    assert CliRunner().invoke(app, ["import", str(path), "--name", "huge"]).exit_code == 0
    result = CliRunner().invoke(app, ["show", "huge__statement-1"])
    assert result.exit_code == 0, result.output
    assert "tests/test_a.py::test_b[param-1]" in result.output, "rich markup must not eat a parametrized id"
    assert "more characters of the problem statement" in result.output and len(result.output) < 100_000, \
        "a 30 MB statement is shown cut (rendered whole, it did not return)"
