"""The default task set as the pinned build makes it, shipped inside the package.

Building the default set runs every candidate mutant's test suite: about 30 minutes on 2 cores, most of a
first `make demo`. The build is pinned (projects, versions, seed, shares: `meta_agent.swe.taskset`), so every
machine makes the same bytes (`Manifest.digest`); meta-agent therefore ships those bytes and installs them
into the cache (30 s on 2 cores with the six sdists to download side by side, where one after another, each
with its build backend built from source, took about 2 min).
`meta-agent tasks build --default --from-source` still builds them, and a build that differs from the
shipped files shows a different digest in `tasks list`.

`meta_agent/swe/default_set/` holds the three split files gzipped (`train.jsonl.gz`, ...) and the build's
`manifest.json` (sha256 of each *uncompressed* file). Installing checks every hash before anything is
visible in the cache, makes the project repositories the checkouts come from (each pinned sdist in one
commit, each bug commit from its gold patch reversed; every commit hash must come out as recorded), and
moves the whole set in at once: a corrupted package or a crash mid-install leaves no set, never a partial one.

The files hold the sealed splits' fixes. They sit inside meta-agent's package directory, which every
sandbox meta-agent opens shows empty (`meta_agent.sealed.hidden_paths`), as it does the cache they are
installed to; `tests/swe_tasks/test_shipped_set.py` checks that a sandbox session cannot read them.

After changing the pins: `meta-agent tasks build --default --from-source`, then `python -m
meta_agent.swe.shipped` copies the cache's set here (and `tasks list` shows its new digest).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from meta_agent.sealed import sealed_backend
from meta_agent.swe.defaults import DEFAULT_TASKSET
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SPLITS, SweInstance, read_instances
from meta_agent.swe.project import BUG_BRANCH_PREFIX
from meta_agent.swe.sources import fetch_sources, prepare_repo
from meta_agent.swe.taskset import (
    DEFAULT_PROJECTS,
    Manifest,
    build_default,
    list_tasksets,
    load_tasks,
    read_manifest,
    tasksets_dir,
)
from sandboxes import Sandbox

SHIPPED_DIR = Path(__file__).resolve().parent / "default_set"


def shipped_manifest(folder: Path = SHIPPED_DIR) -> Manifest | None:
    """The shipped set's manifest, or None where this install carries none."""
    path = folder / "manifest.json"
    if not path.is_file():
        return None
    return Manifest.model_validate_json(path.read_text())


def install_shipped(folder: Path = SHIPPED_DIR, *, sandbox: Sandbox | str = "auto") -> Manifest:
    """Install the shipped default set into the cache (replacing any set named default), all or nothing, with
    the project repositories its checkouts come from (`restore_repos`)."""
    manifest = shipped_manifest(folder)
    if manifest is None:
        raise SweTaskError(f"no shipped default task set in {folder}; build it: meta-agent tasks build --default "
                           "--from-source")
    root = tasksets_dir()
    root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".default-install-", dir=root))
    try:
        for split in SPLITS:
            packed, plain = folder / f"{split}.jsonl.gz", stage / f"{split}.jsonl"
            try:
                with gzip.open(packed, "rb") as src, plain.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
            except (OSError, EOFError) as e:
                raise SweTaskError(f"shipped task set file {packed} cannot be read ({e}); reinstall meta-agent or "
                                   "build the set: meta-agent tasks build --default --from-source") from None
            if hashlib.sha256(plain.read_bytes()).hexdigest() != manifest.sha256[split]:
                raise SweTaskError(f"shipped task set file {packed} does not match its manifest hash (corrupted or "
                                   "edited); reinstall meta-agent or build the set: meta-agent tasks build "
                                   "--default --from-source")
        restore_repos([i for split in SPLITS for i in read_instances(stage / f"{split}.jsonl")], sandbox)
        (stage / "manifest.json").write_text(manifest.model_dump_json(indent=2))
        dest = root / DEFAULT_TASKSET
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(stage, dest)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return manifest


_READY: set[str] = set()
"""Digests of default sets this process has made ready (their repositories checked once)."""


def ensure_default(sandbox: Sandbox | str = "auto") -> None:
    """The default set ready to check out: installed when missing (from the package, else built), and, when it is
    the shipped set, every repository and bug commit it needs made (a cache whose repos were deleted, or a set
    installed before the repos were part of the install)."""
    installed = next((m for m in list_tasksets() if m.name == DEFAULT_TASKSET), None)
    if installed is None:
        installed = build_default(sandbox=sandbox)
        _READY.add(installed.digest)
        return
    shipped = shipped_manifest()
    if installed.digest in _READY or shipped is None or shipped.digest != installed.digest:
        return  # a set built from source made its own repositories
    restore_repos([i for split in SPLITS for i in load_tasks(split, DEFAULT_TASKSET)], sandbox)
    _READY.add(installed.digest)


def restore_repos(instances: list[SweInstance], sandbox: Sandbox | str = "auto") -> None:
    """Make every instance's repository and bug commit, as the build makes them, where they are missing.

    A pinned project's repository is its sdist (downloaded by its pinned sha256, in a sandbox) in one commit;
    a bug commit is that commit with the gold patch reversed. Both are committed with a fixed author and
    date, so each hash must come out as the instance records it: one that does not is an error, never a
    silently different task."""
    backend = sealed_backend(sandbox) if isinstance(sandbox, str) else sandbox
    pins = {f"pypi/{p.name.lower()}-{p.version}": p for p in DEFAULT_PROJECTS}
    by_repo: dict[str, list[SweInstance]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo, []).append(inst)
    for name, group in sorted(by_repo.items()):
        if name not in pins:
            raise SweTaskError(f"{group[0].instance_id}: {name} is not one of the default set's pinned projects")
    fetch_sources([pins[name].source() for name in sorted(by_repo)], backend)
    for name, group in sorted(by_repo.items()):
        repo, _, _ = prepare_repo(pins[name].source(), backend)
        base = repo.base_commit
        for inst in group:
            if repo.has_commit(inst.base_commit):
                continue
            if inst.environment_setup_commit != base:
                raise SweTaskError(f"{inst.instance_id}: built on {inst.environment_setup_commit[:12]}, but {name}'s "
                                   f"sdist gives {base[:12]}; build the set: meta-agent tasks build --default "
                                   "--from-source")
            bug = inst.instance_id.removeprefix(f"{repo.path.name}.")
            made = repo.commit_before_patch(base, inst.patch, f"Inject bug {bug}", f"{BUG_BRANCH_PREFIX}{bug}")
            if made != inst.base_commit:
                raise SweTaskError(f"{inst.instance_id}: its bug commit came out {made[:12]}, not the recorded "
                                   f"{inst.base_commit[:12]}; build the set: meta-agent tasks build --default "
                                   "--from-source")


def ship_cached_default(folder: Path = SHIPPED_DIR) -> Manifest:
    """Copy the cache's default set into `folder` (gzipped byte-for-byte reproducibly: no name, mtime 0)."""
    manifest = read_manifest(DEFAULT_TASKSET)
    folder.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        data = (tasksets_dir() / DEFAULT_TASKSET / f"{split}.jsonl").read_bytes()
        if hashlib.sha256(data).hexdigest() != manifest.sha256[split]:
            raise SweTaskError(f"the cached default set's {split} file does not match its manifest; rebuild it")
        with (folder / f"{split}.jsonl.gz").open("wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
            out.write(data)
    (folder / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest


if __name__ == "__main__":
    shipped = ship_cached_default()
    print(f"shipped default set {shipped.digest}: {shipped.counts} ({shipped.origin}) -> {SHIPPED_DIR}")
