"""The harness repository: creating it, exporting commits into sandboxes, and (for the loop)
branches, commits with trailers, merges and notes. All through gitpython."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import git

from meta_agent.paths import harness_template

AUTHOR = git.Actor("meta-agent", "meta-agent@localhost")
DOMAIN_NAMES = ("math", "code", "swe")
HARNESS_GITIGNORE = "__pycache__/\n*.pyc\n.pytest_cache/\n"


class GitOpsError(RuntimeError):
    """The harness repository is missing, not a git repo, or in a state meta-agent will not touch."""


def _belongs_to_other_domain(rel: Path, domain: str) -> bool:
    """Template files are shared unless they sit in harness/<d>/ or are tests/test_<d>*.py of another domain."""
    others = [d for d in DOMAIN_NAMES if d != domain]
    parts = rel.parts
    if len(parts) >= 2 and parts[0] == "harness" and parts[1] in others:
        return True
    if parts[0] == "configs":
        return True
    return len(parts) == 2 and parts[0] == "tests" and any(parts[1].startswith(f"test_{d}") for d in others)


def init_harness(dest: Path, domain: str) -> git.Repo:
    """Create a harness repo for `domain` from the shipped template, first commit by meta-agent."""
    if domain not in DOMAIN_NAMES:
        raise GitOpsError(f"unknown domain {domain!r}; available: {', '.join(DOMAIN_NAMES)}")
    if dest.exists() and any(dest.iterdir()):
        raise GitOpsError(f"{dest} exists and is not empty; pick a new directory for the harness repo")
    template = harness_template()
    config = template / "configs" / f"{domain}.yaml"
    if not config.is_file():
        raise GitOpsError(f"the harness template has no configuration for domain {domain!r} ({config})")
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted(template.rglob("*")):
        rel = src.relative_to(template)
        if src.is_dir() or "__pycache__" in rel.parts or _belongs_to_other_domain(rel, domain):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    shutil.copy2(config, dest / "harness.yaml")
    (dest / ".gitignore").write_text(HARNESS_GITIGNORE)
    repo = git.Repo.init(dest, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", AUTHOR.name)
        cw.set_value("user", "email", AUTHOR.email)
    repo.git.add(A=True)
    repo.index.commit(
        f"Initial {domain} harness (meta-agent init)",
        author=AUTHOR,
        committer=AUTHOR,
    )
    return repo


def open_harness(path: Path) -> git.Repo:
    """The harness repo at `path`, with a clear error when it is not one."""
    if not path.is_dir():
        raise GitOpsError(f"harness {path} does not exist; create one with `meta-agent init --domain D --dir {path}`")
    try:
        repo = git.Repo(path)
    except git.InvalidGitRepositoryError:
        raise GitOpsError(
            f"harness {path} is not a git repository; meta-agent evolves harnesses as git history. "
            f"Create one with `meta-agent init --domain D --dir NEW_DIR`"
        ) from None
    if repo.bare or not repo.head.is_valid():
        raise GitOpsError(f"harness {path} has no commits yet")
    if not (path / "harness.yaml").is_file() or not (path / "harness" / "__main__.py").is_file():
        raise GitOpsError(f"{path} is a git repo but not a harness (no harness.yaml or harness/__main__.py)")
    return repo


def export_tree(repo: git.Repo, commit: str, dest: Path) -> Path:
    """Write the files of `commit` (no .git) into dest: the sandbox workdir for that version."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    buf = io.BytesIO()
    repo.archive(buf, treeish=commit, format="tar")
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        tar.extractall(dest, filter="data")
    return dest
