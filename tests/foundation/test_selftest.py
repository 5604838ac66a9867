"""The harness's own test suite runs in the sandbox and catches a broken reward."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from meta_agent.gitops import export_tree
from meta_agent.harness_runner import HarnessError, HarnessRunner
from sandboxes import Sandbox
from tests.conftest import commit_all


def test_selftest_passes_on_a_fresh_harness(math_harness: git.Repo, sandbox: Sandbox, tmp_path: Path) -> None:
    work = export_tree(math_harness, "HEAD", tmp_path / "work")
    with HarnessRunner(sandbox, work, commit=math_harness.head.commit.hexsha) as runner:
        result = runner.selftest()
    assert "passed" in result.stdout


def test_selftest_fails_when_the_reward_is_broken(math_harness: git.Repo, sandbox: Sandbox, tmp_path: Path) -> None:
    rewards = Path(math_harness.working_dir) / "harness" / "math" / "rewards.py"
    rewards.write_text(rewards.read_text().replace("return 1.0 if", "return 0.0 if"))
    commit = commit_all(math_harness, "break correctness")
    work = export_tree(math_harness, commit, tmp_path / "work")
    with HarnessRunner(sandbox, work, commit=commit) as runner, pytest.raises(HarnessError) as err:
        runner.selftest()
    assert "test_correct_answer_line_is_rewarded" in err.value.reason
