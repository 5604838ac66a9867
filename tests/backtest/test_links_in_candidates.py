"""A candidate cannot hand meta-agent a name for another path: links and submodules fail the static stage.

The attack: a top-level `meta_agent -> harness` link is no directory and no `.py` file, so a check of
top-level names alone passes it; once merged, `python -m meta_agent` started in the harness checkout
imports the candidate's code as meta-agent, as root.
"""

from __future__ import annotations

import os
from pathlib import Path

import git
import pytest

from meta_agent.backtest.static import run_static
from sandboxes import Limits, Sandbox
from tests.conftest import commit_all


@pytest.mark.parametrize("link,target", [("meta_agent", "harness"), ("sandboxes", "harness"),
                                         ("harness/data", "../../../etc"), ("tests/fixtures", "../harness")])
def test_a_candidate_that_adds_a_link_is_rejected_before_anything_runs(
        math_harness: git.Repo, sandbox: Sandbox, tmp_path: Path, link: str, target: str) -> None:
    root = Path(math_harness.working_dir)
    base = math_harness.head.commit.hexsha
    os.symlink(target, root / link)
    head = commit_all(math_harness, "Cand: add a link")
    result = run_static(math_harness, base, head, sandbox, Limits(timeout_s=120), tmp_path / "static")
    assert not result.passed
    assert f"adds a symbolic link {link!r}" in result.reason and "before running anything" in result.reason


def test_a_link_replacing_a_file_is_rejected_too(math_harness: git.Repo, sandbox: Sandbox, tmp_path: Path) -> None:
    root = Path(math_harness.working_dir)
    base = math_harness.head.commit.hexsha
    (root / "README.md").unlink()
    os.symlink("/etc/shadow", root / "README.md")
    head = commit_all(math_harness, "Cand: README is a link")
    result = run_static(math_harness, base, head, sandbox, Limits(timeout_s=120), tmp_path / "static")
    assert not result.passed and "symbolic link 'README.md'" in result.reason


def test_plain_file_changes_still_pass_the_boundary(math_harness: git.Repo, sandbox: Sandbox, tmp_path: Path) -> None:
    root = Path(math_harness.working_dir)
    base = math_harness.head.commit.hexsha
    (root / "harness" / "notes on\ttabs.md").write_text("a file with an odd name is still only a file\n")
    head = commit_all(math_harness, "Cand: a note")
    result = run_static(math_harness, base, head, sandbox, Limits(timeout_s=300), tmp_path / "static")
    assert result.passed, result.reason
