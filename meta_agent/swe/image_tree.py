"""An image instance's repository, taken out of its image once and cleaned of every commit after the base.

SWE-bench-family images keep the repository at /testbed with its whole git history, and some carry commits
after the base (the fix itself: SWE-bench #465, mini-swe-agent #787). An episode in such an image could read
the answer with `git log --all`. So /testbed is copied out of the image once per (image, base commit) into the
cache, through a tar stream whose members are filtered (no absolute or escaping paths or links, no devices,
no set-uid bits), and its history is cut to the base commit's ancestors inside a sandbox: HEAD detached at the
base, every ref, reflog and graft dropped, unreachable objects pruned, and then every commit object left is
checked to be an ancestor of the base. Files the image holds untracked (build artefacts, egg-info) are
added to .git/info/exclude, so an episode's `git diff` holds only what the episode changed. Episodes and the
sealed evaluation bind a copy of this tree over /testbed, so the image's own history is never visible to them.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import docker
from docker.errors import APIError, DockerException, NotFound

from meta_agent.paths import cache_dir
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.test_spec import IMAGE_WORKDIR
from sandboxes import Limits, RunResult
from sandboxes.docker import DockerSandbox

TREE_RECIPE = "2"
"""Part of each cached tree's name: bump when the cleaning below changes, so trees cleaned before are not used."""
TREE_LIMIT_BYTES = 20 * 1024**3
"""The most a repository taken out of an image may hold (a hostile image could stream forever)."""
SANITIZE_LIMITS = Limits(memory_mb=4096, cpus=2.0, pids=256, timeout_s=1800.0, output_bytes=200_000)
CLEAN_GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
"""Written over the image's .git/config before any git runs: a config can name programs git starts
(core.fsmonitor, core.sshCommand, filters), hooks likewise, so neither is kept."""
_SAFE = re.compile(r"[0-9a-zA-Z]+")
SANITIZE = r"""
set -eu
head=$(git rev-parse --verify --quiet 'HEAD^{commit}' || true)
if [ "$head" != "$BASE" ]; then
  echo "the image's $TESTBED is at commit ${head:-none}, not at the instance's base_commit $BASE" >&2; exit 3
fi
git update-ref --no-deref HEAD "$BASE"
git for-each-ref --format='%(refname)' | while read -r ref; do git update-ref -d "$ref"; done
rm -rf .git/logs .git/ORIG_HEAD .git/FETCH_HEAD .git/MERGE_HEAD .git/info/grafts .git/objects/info/alternates
git -c gc.auto=0 -c gc.reflogExpire=now -c gc.reflogExpireUnreachable=now gc --prune=now --quiet
git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' | grep '^commit ' | cut -d' ' -f2 \
  | sort > "$TMPDIR/all"
git rev-list HEAD | sort > "$TMPDIR/ancestors"
leaked=$(comm -23 "$TMPDIR/all" "$TMPDIR/ancestors" | head -5)
if [ -n "$leaked" ]; then echo "commits that are not ancestors of the base remain: $leaked" >&2; exit 4; fi
mkdir -p .git/info
git ls-files --others --exclude-standard | sed 's/[][*?!\\]/\\&/g; s|^|/|' >> .git/info/exclude
git rev-list --count HEAD
"""


HARBOR_INIT = r"""
set -eu
git init -q
git add -A
git -c user.name=task -c user.email=task@localhost commit -q --allow-empty --no-verify -m base
"""
"""A Harbor task's working directory has no history of its own to keep: a fresh repository holds it as `base`."""


CONDA_ENV_BIN = "/opt/miniconda3/envs/testbed/bin"
"""SWE-bench's images keep the project's environment in this conda env."""
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def image_env(client: docker.DockerClient, image: str) -> dict[str, str]:
    """The PATH commands in the image run with: SWE-bench's conda env, the image's own PATH, and last the directory
    of meta-agent's interpreter (bound in read-only), for images that bring no Python of their own. So a
    policy's `python -m pytest` runs the project's interpreter, with the project's dependencies."""
    env = client.images.get(image).attrs.get("Config", {}).get("Env") or []
    path = next((str(e).split("=", 1)[1] for e in env if str(e).startswith("PATH=")), DEFAULT_PATH)
    if len(path) > 4096 or "\x00" in path:
        path = DEFAULT_PATH
    return {"PATH": f"{CONDA_ENV_BIN}:{path}:{Path(sys.executable).parent}"}


def image_workdir(client: docker.DockerClient, instance: SweInstance, image: str) -> str:
    """Where the instance's episodes work in its image: /testbed (SWE-bench family), or a Harbor task's
    `[environment].workdir`, else the image's WORKDIR."""
    if instance.harbor is None:
        return IMAGE_WORKDIR
    workdir = instance.harbor.workdir or str(client.images.get(image).attrs.get("Config", {}).get("WorkingDir") or "")
    if workdir in ("", "/") or not workdir.startswith("/") or ".." in workdir.split("/"):
        raise SweTaskError(f"Harbor task {instance.instance_id}: its image {image} names no working directory "
                           f"below / ({workdir or 'none'}); set [environment].workdir or a WORKDIR in its Dockerfile")
    return workdir


def instance_tree(client: docker.DockerClient, instance: SweInstance, image: str) -> tuple[Path, str]:
    """The cleaned working tree of `instance` taken from `image` (cached) and where it goes in the image;
    SweTaskError when the image cannot give one whose history stops at base_commit."""
    harbor = instance.harbor is not None
    if not harbor and _SAFE.fullmatch(instance.base_commit) is None:
        raise SweTaskError(f"{instance.instance_id}: base_commit {instance.base_commit[:60]!r} is not a commit id")
    workdir = image_workdir(client, instance, image)
    image_id = client.images.get(image).id.split(":")[-1][:16]
    key = "harbor-" + hashlib.sha256(workdir.encode()).hexdigest()[:8] if harbor else instance.base_commit[:16]
    dest = cache_dir() / "swe" / "image-trees" / f"v{TREE_RECIPE}-{image_id}-{key}"
    name = PurePosixPath(workdir).name
    if (dest / "ready").is_file():
        return dest / name, workdir
    partial = dest.with_name(f"{dest.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        skipped = _extract(client, image, workdir, partial)
        tree = partial / name
        if harbor:
            _fresh_history(tree, instance, image)
        else:
            _sanitize(tree, instance, image)
        (partial / "ready").write_text(f"{image}\nskipped {len(skipped)} members: {skipped[:20]}\n")
        try:
            partial.rename(dest)
        except OSError:  # another process made it first
            shutil.rmtree(partial, ignore_errors=True)
        return dest / name, workdir
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


class _Stream(io.RawIOBase):
    """The engine's archive chunks as a file, cut at TREE_LIMIT_BYTES."""

    def __init__(self, chunks: Iterator[bytes], image: str) -> None:
        self.chunks, self.image, self.rest, self.total = chunks, image, b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self.rest:
            try:
                self.rest = next(self.chunks)
            except StopIteration:
                return 0
            self.total += len(self.rest)
            if self.total > TREE_LIMIT_BYTES:
                raise SweTaskError(f"{IMAGE_WORKDIR} of image {self.image} holds over "
                                   f"{TREE_LIMIT_BYTES >> 30} GiB; refusing it")
        n = min(len(buffer), len(self.rest))
        buffer[:n] = self.rest[:n]
        self.rest = self.rest[n:]
        return n


def _extract(client: docker.DockerClient, image: str, workdir: str, dest: Path) -> list[str]:
    """Copy the image's `workdir` into dest/<its name> without starting the image; the members refused, by name."""
    container = None
    try:
        container = client.api.create_container(image, command=["true"], network_disabled=True)["Id"]
        try:
            chunks, _stat = client.api.get_archive(container, workdir)
        except NotFound:
            raise SweTaskError(f"image {image} has no {workdir}: SWE-bench-family images keep the repository at "
                               f"{IMAGE_WORKDIR}") from None
        skipped: list[str] = []

        def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
            try:
                return tarfile.data_filter(member, path)
            except tarfile.FilterError:
                skipped.append(member.name)
                return None

        with tarfile.open(fileobj=io.BufferedReader(_Stream(iter(chunks), image)), mode="r|") as archive:
            archive.extractall(dest, filter=keep)
        return skipped
    except (APIError, DockerException, tarfile.TarError) as err:
        raise SweTaskError(f"cannot take {workdir} out of image {image}: {str(err).strip()[:300]}") from err
    finally:
        if container is not None:
            client.api.remove_container(container, force=True)


def _in_sandbox(tree: Path, script: str, env: dict[str, str]) -> RunResult:
    from sandboxes.engine import docker_client
    from sandboxes.image import build_image

    client = docker_client()
    try:
        harness_image = build_image(client, log=lambda _line: None)
    finally:
        client.close()
    with DockerSandbox(image=harness_image).open(tree, limits=SANITIZE_LIMITS) as session:
        return session.run(["bash", "-c", script], env=env)


def _fresh_history(tree: Path, instance: SweInstance, image: str) -> None:
    if not tree.is_dir():
        raise SweTaskError(f"the working directory of image {image} is not a directory")
    git = tree / ".git"
    if git.is_symlink() or git.is_file():
        git.unlink()
    elif git.is_dir():
        shutil.rmtree(git)
    done = _in_sandbox(tree, HARBOR_INIT, {})
    if not done.ok:
        raise SweTaskError(f"{instance.instance_id}: cannot track the working directory of image {image}: "
                           + done.describe_failure(5))


def _sanitize(tree: Path, instance: SweInstance, image: str) -> None:
    git = tree / ".git"
    if git.is_symlink() or not git.is_dir():
        raise SweTaskError(f"{IMAGE_WORKDIR} of image {image} is not a git repository with its own .git "
                           "directory; the evaluation resets test files from its base commit")
    (git / "config").unlink(missing_ok=True)
    (git / "config").write_text(CLEAN_GIT_CONFIG)
    shutil.rmtree(git / "hooks", ignore_errors=True)
    done = _in_sandbox(tree, SANITIZE, {"BASE": instance.base_commit, "TESTBED": IMAGE_WORKDIR})
    if not done.ok:
        raise SweTaskError(f"{instance.instance_id}: the repository in image {image} cannot be used: "
                           + done.describe_failure(5))
