"""Where a project to build tasks from comes from: a pinned PyPI sdist or a local git repo."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filelock import FileLock

from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.project import ProjectRepo, local_repo_name, repo_path_for
from meta_agent.swe.sdist import extract_sdist, fetch_sdist, parse_requirement
from sandboxes import Sandbox


@dataclass(frozen=True)
class Source:
    """A project to build tasks from: `pypi` with spec name==version (and optional sha256), or `git` with a path."""

    kind: Literal["pypi", "git"]
    spec: str
    sha256: str | None = None



def parse_sources(from_pypi: list[str], from_git: list[str]) -> list[Source]:
    sources = [Source("pypi", spec) for spec in from_pypi] + [Source("git", path) for path in from_git]
    if not sources:
        raise SweTaskError("nothing to build: pass --from-pypi NAME==VERSION or --from-git PATH (or --default)")
    return sources


def fetch_sources(sources: list[Source], sandbox: Sandbox, *, workers: int = 3) -> None:
    """Download the sdists of the PyPI sources side by side into the sdist cache (a cached one is only checked).

    Each download is a pip process in its own sandbox session that mostly waits on the registry and on
    pip's start-up, so a few at once take about the time of one; `prepare_repo` then finds them cached.
    The first failure is raised, as `prepare_repo` would raise it."""
    pins = [(*parse_requirement(s.spec), s.sha256) for s in sources if s.kind == "pypi"]
    if not pins:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(pins)))) as pool:
        downloads = [pool.submit(fetch_sdist, name, version, sha256, sandbox=sandbox) for name, version, sha256 in pins]
        for download in downloads:
            download.result()


def prepare_repo(source: Source, sandbox: Sandbox) -> tuple[ProjectRepo, str, str]:
    """(repository, repo name, version) for a source; an already built repository is reused."""
    if source.kind == "pypi":
        name, version = parse_requirement(source.spec)
        repo_name = f"pypi/{name.lower()}-{version}"
        path = repo_path_for(repo_name)
        archive = fetch_sdist(name, version, source.sha256, sandbox=sandbox)
        with FileLock(f"{path}.lock"):  # two builds of one project must not both create its repo
            if (path / ".git").is_dir():
                return ProjectRepo(path), repo_name, version
            with tempfile.TemporaryDirectory(prefix="meta-agent-sdist-") as tmp:
                tree = extract_sdist(archive, Path(tmp))
                return ProjectRepo.from_tree(tree, path, f"{name} {version} from its PyPI sdist"), repo_name, version
    src = Path(source.spec)
    repo_name = local_repo_name(src)
    path = repo_path_for(repo_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock"):
        repo = ProjectRepo.from_git(src, path)
    return repo, repo_name, repo.base_commit[:12]
