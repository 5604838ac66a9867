"""The docker image is identified by the content of sandboxes/images/ and built the same two ways."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sandboxes.base import SandboxError
from sandboxes.image import IMAGES_DIR, build_image, content_hash, debian_suite, image_tag, packages


def test_the_tag_changes_exactly_when_the_definitions_change(tmp_path: Path) -> None:
    copy = tmp_path / "images"
    shutil.copytree(IMAGES_DIR, copy)
    assert content_hash(copy) == content_hash(IMAGES_DIR)
    assert image_tag(copy) == image_tag()
    (copy / "packages.txt").write_text((copy / "packages.txt").read_text() + "curl\n")
    assert content_hash(copy) != content_hash(IMAGES_DIR)


def test_both_build_paths_read_the_same_definitions() -> None:
    assert debian_suite() == "bookworm"
    wanted = packages()
    assert {"git", "ca-certificates", "libssl3"} <= set(wanted)
    assert not [p for p in wanted if p.startswith("#") or " " in p]
    assert "packages.txt" in (IMAGES_DIR / "Dockerfile").read_text()


@pytest.mark.docker
def test_a_built_image_is_reused_and_a_missing_one_is_explained(docker_image: str, workdir: Path) -> None:
    from sandboxes.docker import DockerSandbox
    from sandboxes.engine import docker_client

    client = docker_client()
    said: list[str] = []
    try:
        assert build_image(client, log=said.append) == docker_image == image_tag()
    finally:
        client.close()
    assert said == [f"image {docker_image} is up to date"]
    with pytest.raises(SandboxError, match="meta-agent sandbox build-image"):
        DockerSandbox(image="meta-agent-harness:not-built").open(workdir)
