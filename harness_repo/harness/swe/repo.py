"""Task checkouts for episodes and test runs: extract the task's archive, track it with git, diff it."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path
from typing import Any

GIT = ["git", "-c", "user.name=harness", "-c", "user.email=harness@localhost", "-c", "core.hooksPath=/dev/null"]


def _git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GIT, *args], cwd=repo, input=stdin, capture_output=True, text=True, timeout=60)


def checkout(task: dict[str, Any], tasks_dir: Path, dest: Path) -> Path:
    """A fresh, git-tracked copy of the task's repository at its base (the buggy tree)."""
    archive = tasks_dir / task["metadata"]["archive"]
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return track(dest)


def track(tree: Path) -> Path:
    """Put a tree under git with everything in it committed as the base, so `diff` shows what an episode changed."""
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "--no-verify", "-m", "base")
    return tree


def diff(repo: Path) -> str:
    """Everything the episode changed (new files included), as a unified diff."""
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary").stdout


def apply(repo: Path, patch: str) -> tuple[bool, str]:
    """Apply a unified diff; (applied, git's message)."""
    if not patch.strip():
        return True, ""
    res = _git(repo, "apply", "--whitespace=nowarn", "-", stdin=patch)
    return res.returncode == 0, res.stderr.strip()


def touched_files(patch: str) -> list[str]:
    files = []
    for line in patch.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            path = line[4:].strip()
            if path != "/dev/null":
                files.append(path[2:] if path[:2] in ("a/", "b/") else path)
    return sorted(set(files))


PYTEST_CONFIG = ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")


def is_test_file(path: str) -> bool:
    """Test modules, conftest.py, anything under a tests/ dir, and the root pytest configuration."""
    p = Path(path)
    if p.name.startswith("test_") or p.name.endswith("_test.py") or p.name == "conftest.py":
        return True
    if any(part in ("tests", "test", "testing") for part in p.parts[:-1]):
        return True
    return len(p.parts) == 1 and p.name in PYTEST_CONFIG


def restore(repo_dir: Path, files: list[str]) -> None:
    """Put files back as they are in the base commit; files the base does not have are deleted."""
    for rel in files:
        res = _git(repo_dir, "checkout", "HEAD", "--", rel)
        if res.returncode != 0:
            (repo_dir / rel).unlink(missing_ok=True)
