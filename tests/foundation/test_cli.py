"""The commands a user types: init, rollout, report, eval — and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.cli import app
from tests.conftest import TEST_SANDBOX

runner = CliRunner()


def flat(text: str) -> str:
    """Rich wraps long lines at the terminal width; compare text, not layout."""
    return " ".join(text.split())


@pytest.mark.slow
def test_rollout_end_to_end_then_rerender(tmp_path: Path, tiny_policy: Path) -> None:
    run_dir = tmp_path / "run"
    res = runner.invoke(app, ["rollout", "--domain", "math", "--policy", "tiny", "--steps", "2",
                              "--run-dir", str(run_dir), "--sandbox", TEST_SANDBOX])
    assert res.exit_code == 0, res.output
    assert "dominant failure modes" in flat(res.output)
    report_md = run_dir / "train" / "report.md"
    assert report_md.is_file() and (run_dir / "train" / "report.html").is_file()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["command"] == "rollout" and info["domain"] == "math"
    report_md.unlink()
    res = runner.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert report_md.is_file()
    # A finished run is not silently overwritten.
    res = runner.invoke(app, ["rollout", "--policy", "tiny", "--steps", "2", "--run-dir", str(run_dir),
                              "--sandbox", TEST_SANDBOX])
    assert res.exit_code == 1 and "already holds a finished rollout" in flat(res.output)


def test_rollout_on_a_plain_directory_explains_what_a_harness_is(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    res = runner.invoke(app, ["rollout", "--harness", str(tmp_path / "plain"), "--policy", "tiny",
                              "--run-dir", str(tmp_path / "run")])
    assert res.exit_code == 1
    assert "not a git repository" in flat(res.output)


def test_init_then_eval(tmp_path: Path, tiny_policy: Path) -> None:
    res = runner.invoke(app, ["init", "--domain", "math", "--dir", str(tmp_path / "h")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "h" / ".git").is_dir()
    out = tmp_path / "eval.json"
    res = runner.invoke(app, ["eval", "--policy", "tiny", "--split", "selection", "--limit", "4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "95% CI" in flat(res.output)
    assert json.loads(out.read_text())["score"]["n"] == 4


def test_bad_split_is_rejected(tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", "--policy", "tiny", "--split", "train"])
    assert res.exit_code != 0


@pytest.mark.parametrize("args", [
    ["skills", "show", "nope"],
    ["skills", "retire", "nope"],
    ["resume", "/nonexistent/run"],
    ["evolve", "--domain", "chess"],
    ["evolve", "--proposer", "oracle"],
    ["evolve", "--domain", "no_such_module:Nope"],
    ["lineage", "/nonexistent/run"],
])
def test_bad_input_is_one_line_never_a_traceback(args: list[str], tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "meta_agent", *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.lstrip().startswith("error:"), done.stderr


def test_an_internal_bug_keeps_its_traceback() -> None:
    """Only user errors become one line: a KeyError from a bug is not dressed as bad input."""
    from meta_agent.commands.app import App

    app = App()

    @app.command()
    def broken() -> None:
        {}["missing"]

    @app.command()
    def other() -> None:  # a second command, so `broken` is a subcommand name
        pass

    result = CliRunner().invoke(app, ["broken"])
    assert isinstance(result.exception, KeyError)
