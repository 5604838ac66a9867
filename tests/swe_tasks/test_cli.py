"""`meta-agent tasks build | import | list | show` as a user runs them."""

from __future__ import annotations

import os
from pathlib import Path

import git
from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.swe.instance import SweInstance, read_instances


def test_build_import_list_show(
    calc_repo: git.Repo, calc_instances: list[SweInstance], swe_cache: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "calc.jsonl"
    sandbox = os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")
    built = runner.invoke(app, ["build", "--from-git", str(calc_repo.working_dir), "--out", str(out),
                                "--max-per-project", "8", "--sandbox", sandbox, "--no-progress"])
    assert built.exit_code == 0, built.output
    written = read_instances(out)
    assert [i.instance_id for i in written] == [i.instance_id for i in calc_instances]
    assert all(i.split in ("train", "selection", "test") for i in written)

    imported = runner.invoke(app, ["import", str(out), "--name", "calc"])
    assert imported.exit_code == 0, imported.output
    assert f"imported {len(written)} instances" in imported.output

    listed = runner.invoke(app, ["list"])
    assert listed.exit_code == 0 and "calc-" in listed.output, listed.output

    shown = runner.invoke(app, ["show", written[0].instance_id])
    assert shown.exit_code == 0, shown.output
    assert written[0].FAIL_TO_PASS[0] in shown.output
    assert "outcomes found as: unprivileged" in shown.output, "a user exporting to SWE-bench (root) is told"
    assert "diff --git" not in shown.output, "the gold patch is shown only with --patch"
    with_patch = runner.invoke(app, ["show", written[0].instance_id, "--patch"])
    assert "diff --git" in with_patch.output


def test_errors_are_one_line_with_what_to_do(swe_cache: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["build", "--from-pypi", "inflection"])
    assert result.exit_code == 1
    assert "pin an exact version" in result.output and "Traceback" not in result.output
    missing = runner.invoke(app, ["show", "no-such-id"])
    assert missing.exit_code == 1 and "meta-agent tasks list" in missing.output
