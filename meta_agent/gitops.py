"""The harness repository: creating it, exporting commits into sandboxes, and (for the loop)
branches, commits with trailers, merges and notes. All through gitpython."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import git

from meta_agent.crashpoints import crashpoint
from meta_agent.errors import UserError
from meta_agent.paths import harness_template

AUTHOR = git.Actor("meta-agent", "meta-agent@localhost")
HARNESS_GITIGNORE = "__pycache__/\n*.pyc\n.pytest_cache/\n"


class GitOpsError(UserError, RuntimeError):
    """The harness repository is missing, not a git repo, or in a state meta-agent will not touch."""


SAFE_GIT_ENV = {
    # Candidate content (a `.gitattributes` it wrote) must not select filter, diff or merge drivers,
    # hooks or an fsmonitor from the user's or the system's git config: those run programs.
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_COUNT": "3",
    "GIT_CONFIG_KEY_0": "core.hooksPath",
    "GIT_CONFIG_VALUE_0": os.devnull,
    "GIT_CONFIG_KEY_1": "core.attributesFile",
    "GIT_CONFIG_VALUE_1": os.devnull,
    "GIT_CONFIG_KEY_2": "core.fsmonitor",
    "GIT_CONFIG_VALUE_2": "false",
}


def harden(repo: git.Repo) -> git.Repo:
    """Every git command meta-agent runs on this repo ignores user/system config, hooks and drivers."""
    repo.git.update_environment(**SAFE_GIT_ENV)
    return repo


def template_domains(template: Path) -> list[str]:
    """The harness-side domain modules the template ships (one `configs/<name>.yaml` each)."""
    return sorted(p.stem for p in (template / "configs").glob("*.yaml"))


def _belongs_to_other_domain(rel: Path, domain: str, domains: list[str]) -> bool:
    """Template files are shared unless they sit in harness/<d>/ or are tests/test_<d>*.py of another domain."""
    others = [d for d in domains if d != domain]
    parts = rel.parts
    if len(parts) >= 2 and parts[0] == "harness" and parts[1] in others:
        return True
    if parts[0] == "configs":
        return True
    return len(parts) == 2 and parts[0] == "tests" and any(parts[1].startswith(f"test_{d}") for d in others)


def init_harness(dest: Path, domain: str) -> git.Repo:
    """Create a harness repo for `domain` (a harness-side domain module of the template) from the shipped
    template, first commit by meta-agent. It is built beside `dest` and renamed into place once that
    commit exists, so a kill never leaves a half-made repo at `dest`."""
    template = harness_template()
    domains = template_domains(template)
    if domain not in domains:
        raise GitOpsError(f"the harness template has no domain {domain!r}; available: {', '.join(domains)}")
    if dest.exists() and any(dest.iterdir()):
        raise GitOpsError(f"{dest} exists and is not empty; pick a new directory for the harness repo")
    config = template / "configs" / f"{domain}.yaml"
    if not config.is_file():
        raise GitOpsError(f"the harness template has no configuration for domain {domain!r} ({config})")
    dest.parent.mkdir(parents=True, exist_ok=True)
    build = dest.with_name(f".{dest.name}.partial")
    if build.exists():
        shutil.rmtree(build)  # what a killed earlier attempt left
    build.mkdir()
    for src in sorted(template.rglob("*")):
        rel = src.relative_to(template)
        if src.is_dir() or "__pycache__" in rel.parts or _belongs_to_other_domain(rel, domain, domains):
            continue
        target = build / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    shutil.copy2(config, build / "harness.yaml")
    (build / ".gitignore").write_text(HARNESS_GITIGNORE)
    repo = harden(git.Repo.init(build, initial_branch="main"))
    with repo.config_writer() as cw:
        cw.set_value("user", "name", AUTHOR.name)
        cw.set_value("user", "email", AUTHOR.email)
    repo.git.add(A=True)
    crashpoint("setup/harness-half-made", dest.parent)
    repo.index.commit(f"Initial {domain} harness (meta-agent init)", author=AUTHOR, committer=AUTHOR)
    repo.close()
    build.rename(dest)  # an empty `dest` directory is replaced; a non-empty one was refused above
    return harden(git.Repo(dest))


def open_harness(path: Path) -> git.Repo:
    """The harness repo at `path`, with a clear error when it is not one."""
    if not path.is_dir():
        raise GitOpsError(f"harness {path} does not exist; create one with `meta-agent init --domain D --dir {path}`")
    try:
        repo = harden(git.Repo(path))
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


def run_harness(run_dir: Path, given: Path | None, harness_domain: str) -> git.Repo:
    """The harness a command trains under: `given`, else the run's own (created on first use)."""
    if given is not None:
        return open_harness(given.resolve())
    path = run_dir / "harness"
    return open_harness(path) if (path / ".git").exists() else init_harness(path, harness_domain)


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


# ---- candidate branches, merges and notes (the evolve loop) -------------------------------------------------

PROTECTED_PATHS = ("harness/__main__.py", "harness/io.py")
"""Files no candidate may change: the entry-point signatures and the boundary adapter."""
NOTES_REF = "refs/notes/commits"
ARCHIVE_MERGE = "Build on archived candidate "
"""Subject of the merge commit that puts an archived candidate's change under a new candidate
(evolve/archive.py), followed by that candidate's id: how a reader of git alone tells what it was built on."""


def format_message(title: str, body: str = "", trailers: dict[str, str] | None = None) -> str:
    """A commit message with git trailers (`Key: value` lines in the last paragraph)."""
    parts = [title.strip()]
    if body.strip():
        parts.append(body.strip())
    if trailers:
        parts.append("\n".join(f"{k}: {' '.join(str(v).split())}" for k, v in trailers.items()))
    return "\n\n".join(parts) + "\n"


def trailers(repo: git.Repo, commit: str) -> dict[str, str]:
    """The trailers of a commit, parsed by git itself."""
    out = repo.git.log("-1", "--format=%(trailers:only,unfold)", commit)
    result: dict[str, str] = {}
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            result[key.strip()] = value.strip()
    return result


def author_env(when: str | None = None) -> dict[str, str]:
    """git's author and committer variables for meta-agent's own commits (dated `when`, else now)."""
    env = {"GIT_AUTHOR_NAME": AUTHOR.name or "", "GIT_AUTHOR_EMAIL": AUTHOR.email or "",
           "GIT_COMMITTER_NAME": AUTHOR.name or "", "GIT_COMMITTER_EMAIL": AUTHOR.email or ""}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    return env


def commit_dir(repo: git.Repo, src: Path, parent: str, branch: str, message: str, when: str | None = None) -> str:
    """Commit the files of `src` (a plain directory, e.g. a sandbox workdir) as a child of `parent` on `branch`.

    Uses a private index and `--work-tree`, so neither the user's checkout nor their index is touched;
    `.git` entries in `src` are ignored. Returns the new commit (the parent itself if nothing changed).
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        env = {**author_env(when), "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        g = repo.git
        with g.custom_environment(**env):
            g.read_tree(parent)
            g.execute(["git", f"--work-tree={src}", "add", "-A", "--", "."], with_extended_output=False)
            tree = g.write_tree()
            if tree == repo.commit(parent).tree.hexsha:
                commit = parent
            else:
                commit = g.commit_tree(tree, "-p", parent, "-m", message)
    repo.git.update_ref(f"refs/heads/{branch}", commit)
    return commit


def changed_paths(repo: git.Repo, base: str, head: str) -> list[str]:
    return [p for p in repo.git.diff("--name-only", base, head).splitlines() if p]


def touched_protected(repo: git.Repo, base: str, head: str) -> list[str]:
    return [p for p in changed_paths(repo, base, head) if p in PROTECTED_PATHS]


IMPORTABLE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd", ".pth")


LINK_MODE, GITLINK_MODE = "120000", "160000"


def _new_modes(repo: git.Repo, base: str, head: str) -> list[tuple[str, str]]:
    """(path, mode in head) of every path `head` adds or changes relative to `base` (NUL-separated: any name)."""
    fields = repo.git.diff("--raw", "-z", "--no-renames", "--no-abbrev", base, head).split("\0")
    out = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.lstrip(":").split()
        if len(parts) >= 5 and parts[4] != "D":
            out.append((path, parts[1]))
    return out


def _top_level(repo: git.Repo, commit: str) -> dict[str, str]:
    """Top-level entry name -> object type ('blob' or 'tree') of a commit."""
    out = repo.git.ls_tree(commit)
    entries = {}
    for line in out.splitlines():
        meta, _, name = line.partition("\t")
        entries[name] = meta.split()[1]
    return entries


def boundary_violations(repo: git.Repo, base: str, head: str) -> list[str]:
    """Changes no candidate may make, whatever its code does when run:

    - a new top-level directory or Python-importable file: a `python -m ...` started in a checkout
      puts that directory first on `sys.path`, so such a name could shadow meta-agent's own packages
      or a library it imports (harness code belongs under `harness/`, its tests under `tests/`);
    - any `.gitattributes`: attributes select filter, diff and merge drivers that git runs on the
      candidate's own content;
    - a symbolic link or a submodule anywhere: a link is a name for another path, so a top-level
      `meta_agent -> harness` is a package to `python -m meta_agent` as surely as a directory is, and
      a link inside the tree points wherever the checkout's surroundings make it point.
    """
    before, after = _top_level(repo, base), _top_level(repo, head)
    problems = []
    for name, kind in sorted(after.items()):
        if name in before:
            continue
        if kind == "tree" or name.endswith(IMPORTABLE_SUFFIXES):
            problems.append(f"adds top-level {'directory' if kind == 'tree' else 'module'} {name!r} "
                            "(harness code belongs under harness/, tests under tests/)")
    problems += [f"{'adds a symbolic link' if mode == LINK_MODE else 'adds a submodule'} {path!r} (a candidate "
                 "changes files, never what a path points to)" for path, mode in _new_modes(repo, base, head)
                 if mode in (LINK_MODE, GITLINK_MODE)]
    problems += [f"changes {p} (git attributes may select drivers that run programs)"
                 for p in changed_paths(repo, base, head) if Path(p).name == ".gitattributes"]
    return problems


class MergeConflict(GitOpsError):
    """The candidate no longer merges cleanly into main."""


def merge_commit(repo: git.Repo, branch: str, message: str, target: str = "main", when: str | None = None) -> str:
    """The merge commit of `branch` into `target`'s head, created but referenced by nothing (MergeConflict if
    they do not merge cleanly). `git merge-tree --write-tree` computes it without any working tree."""
    old = repo.commit(target).hexsha
    try:
        tree = repo.git.merge_tree("--write-tree", old, branch).splitlines()[0]
    except git.GitCommandError as e:
        raise MergeConflict(f"{branch} conflicts with {target}: {e.stdout.strip()[:400]}") from e
    with repo.git.custom_environment(**author_env(when)):
        return str(repo.git.commit_tree(tree, "-p", old, "-p", repo.commit(branch).hexsha, "-m", message))


def advance(repo: git.Repo, target: str, new: str, old: str, after_ref: Callable[[], None] | None = None) -> None:
    """Move `target` from `old` to `new` (compare-and-swap), the user's clean checkout of it along.
    `after_ref` runs between the two (a crash point: the ref moved, the checkout not yet)."""
    follow = _checkout_follows(repo, target)
    repo.git.update_ref(f"refs/heads/{target}", new, old)
    if after_ref is not None:
        after_ref()
    if follow:
        # Two-tree read-tree is git's own fast-forward of index and files; it refuses to clobber changes.
        repo.git.read_tree("-m", "-u", old, new)


def _held_open(paths: list[Path]) -> set[Path]:
    """Those of `paths` that a live process has open (git keeps a lock file open while it holds it)."""
    wanted, held = {str(p) for p in paths}, set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                target = os.readlink(fd)
                if target in wanted:
                    held.add(Path(target))
        except OSError:
            continue  # the process ended, or is not ours to look at
    return held


def clear_stale_locks(repo: git.Repo) -> list[str]:
    """Remove git's own lock files (`index.lock`, `refs/heads/main.lock`, ...) that a killed git command
    left and no live process holds: git refuses every later update while one is there. Call only while
    holding the run lock. Returns the removed paths, relative to the git dir."""
    git_dir = Path(repo.git_dir)
    locks = [p for p in (git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock",
                         git_dir / "config.lock") if p.is_file()]
    locks += [p for p in (git_dir / "refs").rglob("*.lock") if p.is_file()]
    held = _held_open(locks)
    removed = []
    for lock in locks:
        if lock not in held:
            lock.unlink(missing_ok=True)
            removed.append(str(lock.relative_to(git_dir)))
    return removed


def sync_checkout(repo: git.Repo, target: str = "main") -> bool:
    """Finish moving the user's checkout of `target` if a run was killed after the ref moved: the index
    still holds the tree of `target`'s first parent, and every file either is as in that tree or was
    already moved to `target`'s version (a kill in the middle of the move). True if it moved them."""
    if repo.bare or repo.head.is_detached or repo.active_branch.name != target:
        return False
    head = repo.commit(target)
    if not head.parents or not repo.git.diff("--cached", "--name-only", head.hexsha):
        return False
    previous = head.parents[0]
    if repo.git.diff("--cached", "--name-only", previous.hexsha):
        return False  # the index is neither the old tree nor the new one: the user's own work
    moved = set(repo.git.diff("--name-only", previous.hexsha, head.hexsha, "--").splitlines())
    edited = set(repo.git.diff("--name-only").splitlines())  # files that differ from the (old) index
    if edited - moved or any(repo.git.diff("--name-only", head.hexsha, "--", path) for path in edited):
        return False  # a file changed that the merge did not touch, or not into main's version
    repo.git.read_tree("-u", "--reset", head.hexsha)  # only files the merge moved differ, so nothing is lost
    return True


def merge_no_ff(repo: git.Repo, branch: str, message: str, target: str = "main", when: str | None = None,
                after_ref: Callable[[], None] | None = None) -> str:
    """Merge `branch` into `target` with a merge commit, without any working tree; `target` is either the
    old commit or the finished merge, never mid-merge."""
    old = repo.commit(target).hexsha
    merge = merge_commit(repo, branch, message, target, when)
    advance(repo, target, merge, old, after_ref)
    return merge


def _checkout_follows(repo: git.Repo, branch: str) -> bool:
    """The user's checkout is on `branch` and clean, so its files can move along with the branch."""
    if repo.bare or repo.head.is_detached or repo.active_branch.name != branch:
        return False
    return not repo.is_dirty(untracked_files=False)


def is_merged(repo: git.Repo, commit: str, target: str = "main") -> bool:
    try:
        repo.git.merge_base("--is-ancestor", commit, target)
    except git.GitCommandError:
        return False
    return True


def add_note(repo: git.Repo, commit: str, text: str) -> None:
    """Attach (or replace) the meta-agent note on a commit: `git notes show <commit>` prints it."""
    with repo.git.custom_environment(**author_env()):
        repo.git.notes("--ref", NOTES_REF, "add", "-f", "-m", text, commit)


def read_note(repo: git.Repo, commit: str) -> str | None:
    try:
        return str(repo.git.notes("--ref", NOTES_REF, "show", commit))
    except git.GitCommandError:
        return None
