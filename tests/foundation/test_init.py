"""`meta-agent init` creates a harness repo a user can train with and review in git."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from meta_agent.gitops import GitOpsError, init_harness, open_harness


def test_init_makes_one_meta_agent_commit_with_the_domain_modules(tmp_path: Path) -> None:
    repo = init_harness(tmp_path / "h", "math")
    commits = list(repo.iter_commits())
    assert len(commits) == 1
    assert commits[0].author.name == "meta-agent"
    assert not repo.is_dirty(untracked_files=True)
    files = set(repo.git.ls_files().splitlines())
    assert {"harness/__main__.py", "harness/io.py", "harness/math/rewards.py", "harness.yaml"} <= files
    assert not any(f.startswith(("harness/swe/", "harness/code/", "configs/")) for f in files)
    settings = yaml.safe_load((tmp_path / "h" / "harness.yaml").read_text())
    assert settings["domain"] == "math"
    assert settings["rl"]["num_generations"] >= 2


def test_init_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "notes.txt").write_text("mine")
    with pytest.raises(GitOpsError, match="not empty"):
        init_harness(tmp_path / "h", "math")


def test_init_rejects_an_unknown_domain(tmp_path: Path) -> None:
    with pytest.raises(GitOpsError, match="available: code, math, swe"):
        init_harness(tmp_path / "h", "chess")


def test_a_plain_directory_is_not_accepted_as_harness(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitOpsError, match=r"not a git repository.*meta-agent init"):
        open_harness(tmp_path / "plain")
