"""Where an instance's repository is, and how to get its buggy tree (without history) into a directory.

A checkout has no .git: the policy and the evaluator see the files at base_commit and
nothing else, so neither the pristine parent commit nor other bugs' branches leak.
"""

from __future__ import annotations

from pathlib import Path

from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.project import ProjectRepo, repo_path_for


def repo_path(instance: SweInstance) -> Path:
    """The local git repository holding the instance's base_commit."""
    return repo_path_for(instance.repo)


def checkout(instance: SweInstance, dest: Path) -> Path:
    """Export the tree of instance.base_commit into dest (new or empty); returns dest."""
    path = repo_path(instance)
    if not (path / ".git").is_dir():
        raise SweTaskError(
            f"{instance.instance_id}: no local repository for {instance.repo} at {path}. Build the task set "
            f"(`meta-agent tasks build ...`), or for imported SWE-bench instances clone the project there."
        )
    return ProjectRepo(path).export(instance.base_commit, dest)
