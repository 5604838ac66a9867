"""Task sets in the user cache: the default set built from pinned PyPI projects, and imported sets.

A task set is a directory cache_dir()/swe/tasksets/<name>/ with one JSONL file per split and
a manifest holding each file's sha256, so a corrupted or hand-edited set is refused rather
than silently used. The selection and test splits are sealed: only meta-agent's evaluator
reads them; the harness gets train tasks as checkouts (no .git, no patch).

This module is the API other code uses: `load_tasks`, `repo_path`, `checkout`, `find_instance`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from rich.console import Console

from meta_agent.fsutil import atomic_write_text
from meta_agent.paths import cache_dir
from meta_agent.swe.build import build_tasks
from meta_agent.swe.checkout import checkout, repo_path
from meta_agent.swe.defaults import DEFAULT_MAX_PER_PROJECT
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.image_ref import image_reference, swebench_image_id
from meta_agent.swe.instance import SPLITS, Split, SweInstance, read_instances, write_instances
from meta_agent.swe.sources import Source
from meta_agent.swe.splits import with_splits
from meta_agent.swe.task_images import image_needs
from sandboxes import Sandbox

__all__ = ["DEFAULT_PROJECTS", "DEFAULT_TASKSET", "Manifest", "build_default", "checkout", "find_instance",
           "import_tasks", "list_tasksets", "load_tasks", "repo_path", "save_taskset"]

from meta_agent.swe.defaults import DEFAULT_TASKSET


@dataclass(frozen=True)
class PinnedProject:
    """A PyPI sdist pinned by version and sha256: small, pure Python, suite runs in seconds with plain pytest."""

    name: str
    version: str
    sha256: str

    def source(self) -> Source:
        return Source("pypi", f"{self.name}=={self.version}", self.sha256)


DEFAULT_PROJECTS: tuple[PinnedProject, ...] = (
    PinnedProject("inflection", "0.5.1", "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417"),
    PinnedProject("toolz", "1.0.0", "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02"),
    PinnedProject("cachetools", "8.0.1", "deb1d376d4d28c2f33f3e3058043b005e0af75c35c094bd54053e27d2906ad95"),
    PinnedProject("tabulate", "0.9.0", "0095b12bf5966de529c0feb1fa08671671b3368eec77d7ef7ab114be2c068b3c"),
    PinnedProject("boltons", "26.2.0", "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c"),
    PinnedProject("more-itertools", "10.5.0", "5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6"),
)
DEFAULT_SEED = 0
DEFAULT_SHARES: dict[Split, float] = {"train": 0.6, "selection": 0.2, "test": 0.2}
"""The default set's split shares, per tier. Wider sealed splits than a user's build gets (70 / 15 / 15): the
easy tier, the one a small policy learns on, is 282 instances, and 20% of it gives the gate and the test
at least 50 each (15% gave 43 and 42)."""


class Manifest(BaseModel):
    """What a task set holds and the sha256 of each split file."""

    name: str
    origin: str = Field(description="how the set was made: the projects it was built from, or the imported file")
    seed: int = 0
    counts: dict[Split, int]
    sha256: dict[Split, str]

    @property
    def digest(self) -> str:
        """One hash of the set's content (its split files), the same for two users with the same set."""
        text = "".join(f"{split}:{self.sha256[split]}\n" for split in SPLITS)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def tasksets_dir() -> Path:
    return cache_dir() / "swe" / "tasksets"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_taskset(name: str, instances: list[SweInstance], *, origin: str, seed: int = 0) -> Manifest:
    """Write instances (their `split` must be set) as a task set, replacing one of the same name."""
    if not name or "/" in name or name.startswith("."):
        raise SweTaskError(f"task set name {name!r}: use a plain name such as 'swe-gym'")
    missing = [i.instance_id for i in instances if i.split is None]
    if missing:
        raise SweTaskError(f"instances without a split: {missing[:3]}; assign splits before saving")
    folder = tasksets_dir() / name
    counts: dict[Split, int] = {}
    digests: dict[Split, str] = {}
    for split in SPLITS:
        path = folder / f"{split}.jsonl"
        counts[split] = write_instances(path, [i for i in instances if i.split == split], with_private=True)
        digests[split] = _sha256(path)
    manifest = Manifest(name=name, origin=origin, seed=seed, counts=counts, sha256=digests)
    atomic_write_text(folder / "manifest.json", manifest.model_dump_json(indent=2))
    return manifest


def read_manifest(name: str) -> Manifest:
    path = tasksets_dir() / name / "manifest.json"
    if not path.is_file():
        if name == DEFAULT_TASKSET:
            raise SweTaskError("the default SWE task set is not built yet: run `meta-agent tasks build --default` "
                               "(once; it is cached in the user cache dir)")
        known = ", ".join(m.name for m in list_tasksets()) or "none"
        raise SweTaskError(f"no SWE task set named {name!r} (known: {known}); build or import it first")
    return Manifest.model_validate_json(path.read_text())


def load_tasks(split: Split, taskset: str = DEFAULT_TASKSET) -> list[SweInstance]:
    """The instances of one split, after checking the file against the manifest's sha256."""
    if split not in SPLITS:
        raise SweTaskError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    manifest = read_manifest(taskset)
    path = tasksets_dir() / taskset / f"{split}.jsonl"
    if not path.is_file() or _sha256(path) != manifest.sha256[split]:
        raise SweTaskError(f"{path} is missing or does not match its manifest hash (edited or corrupted); "
                           f"rebuild or re-import task set {taskset!r}")
    return read_instances(path)


def list_tasksets() -> list[Manifest]:
    root = tasksets_dir()
    if not root.is_dir():
        return []
    return [Manifest.model_validate_json(p.read_text()) for p in sorted(root.glob("*/manifest.json"))]


def find_instance(instance_id: str) -> SweInstance:
    """Look an instance up by id across all task sets."""
    for manifest in list_tasksets():
        for split in SPLITS:
            for instance in load_tasks(split, manifest.name):
                if instance.instance_id == instance_id:
                    return instance
    raise SweTaskError(f"no instance {instance_id!r} in any task set; `meta-agent tasks list` shows what exists")


def build_default(
    *,
    sandbox: Sandbox | str = "auto",
    workers: int = 2,
    console: Console | None = None,
    progress: bool = True,
    from_source: bool = False,
) -> Manifest:
    """The default set: installed from the copy shipped in the package (`meta_agent.swe.shipped`), or with
    `from_source` (or where none is shipped) built, or resumed, from the pinned projects and saved with splits.

    Everything that shapes the set is pinned here (projects, seed, instances per project), so
    every machine builds the same files; `Manifest.digest` shows whether two sets are equal.
    """
    from meta_agent.swe.shipped import install_shipped, shipped_manifest

    if not from_source and shipped_manifest() is not None:
        if progress:
            (console or Console(stderr=True)).print(
                "installing the default task set shipped with meta-agent (once; its projects' sdists are "
                "downloaded and each bug commit made: about 30 s)")
        return install_shipped(sandbox=sandbox)
    instances = build_tasks([p.source() for p in DEFAULT_PROJECTS], sandbox=sandbox,
                            max_per_project=DEFAULT_MAX_PER_PROJECT, seed=DEFAULT_SEED, workers=workers,
                            console=console, progress=progress)
    return save_taskset(DEFAULT_TASKSET, with_splits(instances, seed=DEFAULT_SEED, shares=DEFAULT_SHARES),
                        origin=default_origin(), seed=DEFAULT_SEED)


def default_origin() -> str:
    """The `origin` of the default set's manifest: the pinned projects it is built from."""
    return "built from " + ", ".join(f"{p.name}=={p.version}" for p in DEFAULT_PROJECTS)


def import_tasks(path: Path, *, name: str, split: Split | Literal["auto"] | None = None,
                 image_template: str | None = None) -> Manifest:
    """Validate a SWE-bench / SWE-Gym / our JSONL file and save it as task set `name`.

    `split`: put every instance in that split; `auto`: assign by (project, file, function) like built
    sets; None: keep the file's own `split` fields (instances without one go to `test`).
    `image_template`: the image of every instance the file gives none, with `{instance_id}` and
    `{swebench_id}` (SWE-bench's spelling: `__` as `_1776_`, lowercase) filled in.
    """
    if name == DEFAULT_TASKSET:
        raise SweTaskError("the name 'default' is reserved for the built default set; pick another --name")
    if path.is_dir():
        from meta_agent.swe.harbor import harbor_instances

        instances = harbor_instances(path, name=name, split="test" if split is None or split == "auto" else split)
        if split == "auto":
            instances = [i.model_copy(update={"split": _hashed_split(i.instance_id)}) for i in instances]
        return save_taskset(name, instances, origin=f"Harbor tasks from {path.resolve()}")
    instances = read_instances(path)
    if not instances:
        raise SweTaskError(f"{path}: no instances in the file")
    ids = [i.instance_id for i in instances]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise SweTaskError(f"{path}: instance id {dup!r} occurs more than once")
    if image_template is not None:
        instances = [with_image(i, image_template) for i in instances]
    image_needs(instances)  # two recipes for one image: refused before anything is saved
    if split == "auto":
        instances = with_splits(instances)
    else:
        instances = [i.model_copy(update={"split": split or i.split or "test"}) for i in instances]
    return save_taskset(name, instances, origin=f"imported from {path.resolve()}")


def with_image(instance: SweInstance, template: str) -> SweInstance:
    """`instance` with its image from `template` unless it names one."""
    if instance.image is not None:
        return instance
    try:
        name = image_reference(template.format(instance_id=instance.instance_id,
                                               swebench_id=swebench_image_id(instance.instance_id)))
    except (KeyError, IndexError, ValueError) as e:
        raise SweTaskError(f"--image-template {template!r} for {instance.instance_id}: {e} (use {{instance_id}} "
                           "or {swebench_id})") from None
    return instance.model_copy(update={"image": name})


def _hashed_split(instance_id: str) -> Split:
    """A split by the id alone, 70/15/15 (Harbor tasks have no project files to split by): stable everywhere."""
    bucket = int(hashlib.sha256(instance_id.encode()).hexdigest()[:8], 16) % 100
    return "train" if bucket < 70 else ("selection" if bucket < 85 else "test")
