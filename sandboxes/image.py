"""The docker backend's image: tagged by a content hash of `sandboxes/images/`, built once.

Two ways to build the same image: the Dockerfile where a registry is reachable (its base
image can be pulled), else a Debian minbase rootfs from `debootstrap` with the same
packages, loaded with `docker import` (needs root and the Debian mirror, no registry).
Python packages are not installed in the image: sessions bind the host interpreter and
the project venv read-only at their own paths, so the image stays small and never drifts
from the venv the rest of the project uses.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import docker
from docker.errors import APIError, BuildError, DockerException, ImageNotFound

from sandboxes.base import SandboxError

IMAGES_DIR = Path(__file__).parent / "images"
REPOSITORY = "meta-agent-harness"
RECIPE_VERSION = "1"
"""Bump when the build steps below change what ends up in the image."""
DEFAULT_MIRROR = "http://deb.debian.org/debian"
HASH_LABEL = "meta-agent.images-hash"

Method = Literal["auto", "dockerfile", "debootstrap"]
Log = Callable[[str], None]


def content_hash(images_dir: Path = IMAGES_DIR) -> str:
    """sha256 over the image definition files (names and bytes) and the recipe version."""
    digest = hashlib.sha256(f"recipe {RECIPE_VERSION}\n".encode())
    for path in sorted(p for p in images_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(images_dir)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def image_tag(images_dir: Path = IMAGES_DIR) -> str:
    return f"{REPOSITORY}:{content_hash(images_dir)[:12]}"


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def packages(images_dir: Path = IMAGES_DIR) -> list[str]:
    lines = (images_dir / "packages.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def base_image(images_dir: Path = IMAGES_DIR) -> str:
    """The Dockerfile's FROM image; its Debian suite is what debootstrap builds."""
    match = re.search(r"^FROM\s+(\S+)", (images_dir / "Dockerfile").read_text(), re.MULTILINE)
    if match is None:
        raise SandboxError(f"{images_dir / 'Dockerfile'} has no FROM line")
    return match.group(1)


def debian_suite(images_dir: Path = IMAGES_DIR) -> str:
    match = re.fullmatch(r"debian:(\w+)(-slim)?", base_image(images_dir))
    if match is None:
        raise SandboxError(f"the Dockerfile's base {base_image(images_dir)!r} is not a debian:<suite> image")
    return match.group(1)


def build_image(client: docker.DockerClient, *, method: Method = "auto", force: bool = False, log: Log = print) -> str:
    """Build the harness image unless one with the current content hash exists; returns its tag."""
    tag = image_tag()
    if not force and image_exists(client, tag):
        log(f"image {tag} is up to date")
        return tag
    if method == "auto":
        method = "dockerfile" if _registry_reachable(client, log) else "debootstrap"
    log(f"building {tag} with {method}")
    if method == "dockerfile":
        _build_with_dockerfile(client, tag, log)
    else:
        _build_with_debootstrap(client, tag, log)
    log(f"built {tag}")
    return tag


def _registry_reachable(client: docker.DockerClient, log: Log) -> bool:
    base = base_image()
    if image_exists(client, base):
        return True
    try:
        client.images.pull(base)
    except (APIError, DockerException) as err:
        log(f"cannot pull {base} ({str(err).strip()[:200]}): building without a registry")
        return False
    return True


def _build_with_dockerfile(client: docker.DockerClient, tag: str, log: Log) -> None:
    try:
        _image, output = client.images.build(
            path=str(IMAGES_DIR),
            tag=tag,
            rm=True,
            pull=False,
            network_mode="host",  # apt needs the network; engines started with --bridge=none have no other
            labels={HASH_LABEL: content_hash()},
        )
    except BuildError as err:
        raise SandboxError(f"docker build of {tag} failed: {err.msg}") from err
    for chunk in output:
        if isinstance(chunk, dict) and chunk.get("stream", "").strip():
            log(chunk["stream"].rstrip())


def _build_with_debootstrap(client: docker.DockerClient, tag: str, log: Log) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise SandboxError(
            "no registry is reachable and debootstrap is missing: install it "
            "(Debian/Ubuntu: `apt-get install debootstrap`) or make a registry reachable"
        )
    if os.geteuid() != 0:
        raise SandboxError("building the image without a registry runs debootstrap, which needs root")
    mirror = os.environ.get("META_AGENT_DEBIAN_MIRROR", DEFAULT_MIRROR)
    with tempfile.TemporaryDirectory(prefix="meta-agent-rootfs-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        cmd = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(packages())}",
            debian_suite(),
            str(rootfs),
            mirror,
        ]
        log(" ".join(cmd))
        _run_logged(cmd, log, f"debootstrap from {mirror} failed (set META_AGENT_DEBIAN_MIRROR to another mirror?)")
        _finish_rootfs(rootfs)
        tarball = Path(tmp) / "rootfs.tar"
        _run_logged(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], log, "packing the rootfs failed")
        repository, _, version = tag.partition(":")
        log(f"docker import -> {tag}")
        try:
            client.api.import_image(
                src=str(tarball),
                repository=repository,
                tag=version,
                changes=[
                    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "ENV LANG=C.UTF-8",
                    f"LABEL {HASH_LABEL}={content_hash()}",
                ],
            )
        except DockerException as err:
            raise SandboxError(f"docker import of the rootfs failed: {err}") from err


def _finish_rootfs(rootfs: Path) -> None:
    """Drop package caches (~100 MB), install the same gitconfig and open /root as the Dockerfile does."""
    for cache in (rootfs / "var/cache/apt/archives", rootfs / "var/lib/apt/lists"):
        for entry in cache.glob("*"):
            if entry.is_file():
                entry.unlink()
    shutil.copyfile(IMAGES_DIR / "gitconfig", rootfs / "etc/gitconfig")
    (rootfs / "etc/gitconfig").chmod(0o644)
    (rootfs / "root").chmod(0o755)  # the unprivileged sandbox uid traverses it to a host Python bound below


def _run_logged(cmd: list[str], log: Log, failure: str) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        log(line.rstrip())
        tail = [*tail[-19:], line.rstrip()]
    if proc.wait() != 0:
        raise SandboxError(f"{failure} (exit {proc.returncode}):\n" + "\n".join(tail))
