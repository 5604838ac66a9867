"""Task images: the container image each SWE-bench-family instance runs in, built, listed and pruned like data.

An instance names its image (`SweInstance.image`). `build` makes every image a task set needs and is not on
the engine yet: from the instance's `dockerfile` where it has one (built with an empty context, no network
unless asked, `ARG META_AGENT_BASE` set to meta-agent's Debian base image, since no registry may be reachable),
else by pulling it. Images built here carry labels, so `prune` removes only those and `list` tells them apart.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import docker
import requests
from docker.errors import APIError, BuildError, DockerException, ImageNotFound

from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.image_ref import with_tag
from meta_agent.swe.instance import SPLITS, SweInstance

TASK_LABEL = "meta-agent.task-image"
DOCKERFILE_LABEL = "meta-agent.dockerfile-sha256"
BASE_ARG = "META_AGENT_BASE"
BUILD_MEMORY = 4 * 1024**3
BUILD_IDLE_S = 1800
"""A build step may print nothing for this long (a quiet compile); one that hangs is cut off here."""
Log = Callable[[str], None]


@dataclass(frozen=True)
class ImageNeed:
    """One image a task set needs: which instances run in it, and how to make it."""

    name: str
    instances: tuple[str, ...]
    dockerfile: str | None
    context: str | None = None
    """A build context directory holding its Dockerfile (a Harbor task's environment/), instead of `dockerfile`."""

    def recipe_digest(self) -> str | None:
        if self.dockerfile is not None:
            return _sha(self.dockerfile)
        if self.context is not None:
            from meta_agent.swe.harbor import tree_digest

            return tree_digest(Path(self.context))
        return None


@dataclass(frozen=True)
class ImageState:
    need: ImageNeed
    present: bool
    size: int
    built_here: bool
    stale: bool
    """Built here from another Dockerfile than the instances now give: `build` makes it again."""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _recipe(inst: SweInstance) -> tuple[str | None, str | None]:
    """(dockerfile, context) that make the instance's image; (None, None): it is pulled or loaded."""
    if inst.dockerfile is not None:
        return inst.dockerfile, None
    if inst.harbor is not None:
        from meta_agent.swe.harbor import task_files

        environment = task_files(inst.harbor) / "environment"
        if (environment / "Dockerfile").is_file():
            return None, str(environment)
    return None, None


def image_needs(instances: Iterable[SweInstance]) -> list[ImageNeed]:
    """The distinct images of `instances`; SweTaskError when two instances build one image differently."""
    users: dict[str, list[str]] = {}
    recipes: dict[str, tuple[str | None, str | None]] = {}
    for inst in instances:
        if inst.image is None:
            continue
        name = with_tag(inst.image)
        users.setdefault(name, []).append(inst.instance_id)
        recipe = _recipe(inst)
        known = recipes.get(name)
        if known is not None and recipe != (None, None) and known != (None, None) and known != recipe:
            raise SweTaskError(f"image {name} is built from two different Dockerfiles (instances "
                               f"{users[name][0]} and {inst.instance_id}); give each recipe its own image name")
        if known is None or known == (None, None):
            recipes[name] = recipe
    return [ImageNeed(name, tuple(ids), *recipes[name]) for name, ids in sorted(users.items())]


def taskset_instances(taskset: str) -> list[SweInstance]:
    from meta_agent.swe.taskset import load_tasks

    return [inst for split in SPLITS for inst in load_tasks(split, taskset)]


def _image(client: docker.DockerClient, name: str) -> docker.models.images.Image | None:
    try:
        return client.images.get(name)
    except ImageNotFound:
        return None


def image_state(client: docker.DockerClient, need: ImageNeed) -> ImageState:
    image = _image(client, need.name)
    if image is None:
        return ImageState(need, False, 0, False, False)
    labels = image.labels or {}
    built_here = labels.get(TASK_LABEL) == "1"
    digest = need.recipe_digest()
    stale = built_here and digest is not None and labels.get(DOCKERFILE_LABEL) != digest
    return ImageState(need, True, int(image.attrs.get("Size") or 0), built_here, stale)


def build_images(client: docker.DockerClient, needs: list[ImageNeed], *, network: bool = False, force: bool = False,
                 log: Log = print) -> list[ImageState]:
    """Make every needed image that is missing (or stale, or all with `force`); returns their states after."""
    todo = [s for s in (image_state(client, n) for n in needs) if force or not s.present or s.stale]
    log(f"images: {len(needs)} needed, {len(needs) - len(todo)} already on the engine, {len(todo)} to make")
    base: str | None = None
    for i, state in enumerate(todo, start=1):
        need = state.need
        if need.dockerfile is None and need.context is None:
            log(f"[{i}/{len(todo)}] pulling {need.name}")
            _pull(client, need)
            continue
        if base is None:
            from sandboxes.image import build_image

            base = build_image(client, log=log)
        log(f"[{i}/{len(todo)}] building {need.name} ({len(need.instances)} instances)")
        _build(client, need, base, network, log)
    return [image_state(client, n) for n in needs]


def _pull(client: docker.DockerClient, need: ImageNeed) -> None:
    try:
        client.images.pull(need.name)
    except (APIError, DockerException) as err:
        raise SweTaskError(
            f"image {need.name} (instance {need.instances[0]}) is not on this engine and cannot be pulled "
            f"({str(err).strip()[:200]}); load it (`docker load -i FILE`) or give the instances a `dockerfile`"
        ) from err


def _build(client: docker.DockerClient, need: ImageNeed, base: str, network: bool, log: Log) -> None:
    with tempfile.TemporaryDirectory(prefix="meta-agent-task-image-") as empty:
        if need.dockerfile is not None:
            # The context holds the Dockerfile alone: COPY and ADD can reach nothing of this machine.
            (Path(empty) / "Dockerfile").write_text(need.dockerfile, encoding="utf-8")
        context = need.context or empty
        try:
            _image, output = client.images.build(
                path=context, tag=need.name, rm=True, forcerm=True, pull=False,
                network_mode="host" if network else "none",
                buildargs={BASE_ARG: base},
                labels={TASK_LABEL: "1", DOCKERFILE_LABEL: need.recipe_digest() or ""},
                container_limits={"memory": BUILD_MEMORY, "memswap": BUILD_MEMORY}, timeout=BUILD_IDLE_S,
            )
        except BuildError as err:
            tail = "\n".join(str(c.get("stream") or c.get("error") or "").rstrip() for c in err.build_log)[-1500:]
            hint = "" if network else " (built without network: pass --network if it installs packages)"
            raise SweTaskError(f"building image {need.name} (instance {need.instances[0]}) failed{hint}: "
                               f"{err.msg}\n{tail}") from err
        except (APIError, DockerException, requests.RequestException) as err:
            raise SweTaskError(f"building image {need.name} failed: {str(err).strip()[:500]}") from err
    for chunk in output:
        line = str(chunk.get("stream") or "").rstrip() if isinstance(chunk, dict) else ""
        if line:
            log(f"  {line}")


def require_image(client: docker.DockerClient, instance: SweInstance, taskset: str | None = None) -> str:
    """The instance's image name as the engine has it; SweTaskError naming the command that makes it."""
    assert instance.image is not None
    name = with_tag(instance.image)
    if _image(client, name) is None:
        where = f" --taskset {taskset}" if taskset else " --taskset NAME"
        raise SweTaskError(f"instance {instance.instance_id} runs in image {name}, which is not on this Docker "
                           f"engine; make it with `meta-agent tasks images build{where}`")
    return name


def prune_images(client: docker.DockerClient, keep: set[str], *, everything: bool = False,
                 log: Log = print) -> tuple[list[str], int]:
    """Remove the images built here that no task set names (all of them with `everything`); (names, bytes)."""
    removed: list[str] = []
    freed = 0
    for image in client.images.list(filters={"label": f"{TASK_LABEL}=1"}):
        tags = image.tags or [image.id]
        if not everything and any(t in keep for t in tags):
            continue
        size = int(image.attrs.get("Size") or 0)
        try:
            client.images.remove(image.id, force=True)
        except (APIError, DockerException) as err:
            log(f"could not remove {tags[0]}: {str(err).strip()[:200]}")
            continue
        removed += tags
        freed += size
    return removed, freed
