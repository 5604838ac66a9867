"""A project's git repository under cache_dir()/swe/repos/: a pristine base commit plus one branch per bug.

Commits are made with a fixed author and date, so the same source tree and the same bug
give the same commit hashes on every machine: a task set's base_commit values are
reproducible and can be checked against a manifest.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path

import git
from gitdb import IStream

from meta_agent.paths import cache_dir
from meta_agent.swe.errors import SweTaskError

BASE_BRANCH = "swe-base"
BUG_BRANCH_PREFIX = "bug/"
_FIXED_ENV = {
    "GIT_AUTHOR_NAME": "meta-agent task builder",
    "GIT_AUTHOR_EMAIL": "tasks@meta-agent.invalid",
    "GIT_COMMITTER_NAME": "meta-agent task builder",
    "GIT_COMMITTER_EMAIL": "tasks@meta-agent.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}
_JUNK = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".pytest_cache", ".tox", ".eggs", "build", "dist")
"""Build output and caches. An sdist's `*.egg-info` stays: it is the project's metadata, and a project
that reads its own version at import (`importlib.metadata.version`, as semantic_version does) fails
without it, since the checkout is on the path but not installed."""


def repos_dir() -> Path:
    return cache_dir() / "swe" / "repos"


def repo_path_for(repo: str) -> Path:
    """Where the repository named `repo` (owner/name) lives locally."""
    return repos_dir() / repo.replace("/", "__")


def local_repo_name(source: Path) -> str:
    """`local/<dir>-<hash of its absolute path>`: two local repos with one name never share a cache entry."""
    resolved = source.resolve()
    return f"local/{resolved.name}-{hashlib.sha256(str(resolved).encode()).hexdigest()[:8]}"


def _key(branch: str) -> str:
    """A file-name-safe key for a branch's scratch files under .git."""
    return hashlib.sha256(branch.encode()).hexdigest()[:12]


class ProjectRepo:
    """The bare facts of one task repository; all writes go through git plumbing (no checkout is moved).

    gitpython shares long-lived `git cat-file` processes per Repo object, which is not
    thread-safe, so every method holds the object's lock.
    """

    def __init__(self, path: Path) -> None:
        try:
            self.repo = git.Repo(path)
        except (git.NoSuchPathError, git.InvalidGitRepositoryError) as e:
            raise SweTaskError(f"{path} is not a task repository; build the task set first") from e
        self.path = path
        self.lock = threading.RLock()

    @classmethod
    def from_tree(cls, tree: Path, dest: Path, message: str) -> ProjectRepo:
        """A new repo whose single commit holds `tree` (an extracted sdist) minus build junk."""
        if dest.exists():
            raise SweTaskError(f"{dest} already exists; remove it to rebuild the repository")
        shutil.copytree(tree, dest, ignore=_JUNK, symlinks=True)
        repo = git.Repo.init(dest, initial_branch=BASE_BRANCH)
        repo.git.add("--all", "--force")
        tree_sha = repo.git.write_tree()
        commit = repo.git.commit_tree(tree_sha, "-m", message, env=_FIXED_ENV)
        repo.git.update_ref(f"refs/heads/{BASE_BRANCH}", commit)
        return cls(dest)

    @classmethod
    def from_git(cls, source: Path, dest: Path) -> ProjectRepo:
        """A clone of a local repo; its HEAD commit becomes the base, the user's repo is never written to."""
        try:
            src = git.Repo(source)
        except (git.NoSuchPathError, git.InvalidGitRepositoryError) as e:
            raise SweTaskError(f"--from-git {source}: not a git repository") from e
        if not src.head.is_valid():
            raise SweTaskError(f"--from-git {source}: the repository has no commit yet; commit the project first")
        head = src.head.commit.hexsha
        if dest.exists():
            repo = cls(dest)
            repo.repo.git.fetch(str(source.resolve()), head)
        else:
            git.Repo.clone_from(str(source.resolve()), dest, no_hardlinks=True)
            repo = cls(dest)
        repo.repo.git.update_ref(f"refs/heads/{BASE_BRANCH}", head)
        return repo

    @property
    def base_commit(self) -> str:
        with self.lock:
            return self.repo.git.rev_parse(f"refs/heads/{BASE_BRANCH}")

    def read(self, commit: str, rel: str) -> str:
        with self.lock:
            blob = self.repo.commit(commit).tree / rel
            return blob.data_stream.read().decode("utf-8")

    def files(self, commit: str) -> list[str]:
        with self.lock:
            listing = self.repo.git.ls_tree("-r", "-z", "--name-only", commit)
            return [p for p in listing.split("\0") if p]

    def commit_file(self, parent: str, rel: str, text: str, message: str, branch: str) -> str:
        """A commit on `parent` that replaces one file, referenced by `branch`; the worktree is not touched."""
        def stage(env: dict[str, str]) -> None:
            data = text.encode("utf-8")
            blob = self.repo.odb.store(IStream(b"blob", len(data), io.BytesIO(data))).hexsha.decode()
            mode = (self.repo.commit(parent).tree / rel).mode
            self.repo.git.update_index("--cacheinfo", f"{mode:o},{blob},{rel}", env=env)

        return self._commit_staged(parent, message, branch, stage)

    def commit_before_patch(self, parent: str, patch: str, message: str, branch: str) -> str:
        """The commit on `parent` that `patch` turns back into `parent` (a bug commit, from its gold patch), made
        as `commit_file` makes it: the same bug gives the same hash."""
        diff = self.path / ".git" / f"swe-patch-{_key(branch)}"

        def stage(env: dict[str, str]) -> None:
            diff.write_text(patch, encoding="utf-8")
            try:
                self.repo.git.apply("--cached", "--reverse", str(diff), env=env)
            except git.GitCommandError as e:
                raise SweTaskError(f"{self.path}: the patch of {branch} does not apply in reverse on "
                                   f"{parent[:12]}: {str(e.stderr).strip()[:300]}") from None
            finally:
                diff.unlink(missing_ok=True)

        return self._commit_staged(parent, message, branch, stage)

    def _commit_staged(self, parent: str, message: str, branch: str,
                       stage: Callable[[dict[str, str]], None]) -> str:
        """`parent`'s tree changed by `stage` (given the env of a private index holding that tree), committed on
        `parent` with the fixed author and date and referenced by `branch`; the worktree is not touched."""
        with self.lock:
            git_ = self.repo.git
            index = self.path / ".git" / f"swe-index-{_key(branch)}"
            env = {**_FIXED_ENV, "GIT_INDEX_FILE": str(index)}
            try:
                git_.read_tree(parent, env=env)
                stage(env)
                tree_sha = git_.write_tree(env=env)
            finally:
                index.unlink(missing_ok=True)
            commit = git_.commit_tree(tree_sha, "-p", parent, "-m", message, env=_FIXED_ENV)
            git_.update_ref(f"refs/heads/{branch}", commit)
            return commit

    def diff(self, old: str, new: str) -> str:
        """Unified diff turning `old` into `new`, as `git apply` and `patch -p1` read it."""
        with self.lock:
            text = self.repo.git.diff(old, new, "--no-color", "--no-ext-diff", "--full-index",
                                      "--src-prefix=a/", "--dst-prefix=b/", "--no-renames")
            return text + "\n" if text else ""

    def delete_branch(self, branch: str) -> None:
        with self.lock:
            self.repo.git.update_ref("-d", f"refs/heads/{branch}")

    def has_commit(self, sha: str) -> bool:
        with self.lock:
            try:
                self.repo.git.cat_file("-e", f"{sha}^{{commit}}")
            except git.GitCommandError:
                return False
            return True

    def export(self, commit: str, dest: Path) -> Path:
        """Write the tree of `commit` into dest (no .git): the checkout a policy or evaluator works on."""
        with self.lock:
            if not self.has_commit(commit):
                raise SweTaskError(f"commit {commit} is not in {self.path}; rebuild the task set that references it")
            dest.mkdir(parents=True, exist_ok=True)
            if any(dest.iterdir()):
                raise SweTaskError(f"{dest} is not empty; check out into a new or empty directory")
            buf = io.BytesIO()
            self.repo.archive(buf, treeish=commit, format="tar")
            buf.seek(0)
            with tarfile.open(fileobj=buf) as tar:
                tar.extractall(dest, filter="data")
            return dest
