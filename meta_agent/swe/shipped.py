"""The default task set as the pinned build makes it, shipped inside the package.

Building the default set runs every candidate mutant's test suite: about 30 minutes on 2 cores, most of a
first `make demo`. The build is pinned (projects, versions, seed, shares: `meta_agent.swe.taskset`), so every
machine makes the same bytes (`Manifest.digest`); meta-agent therefore ships those bytes and installs them
into the cache in a second. `meta-agent tasks build --default --from-source` still builds them, and a build
that differs from the shipped files shows a different digest in `tasks list`.

`meta_agent/swe/default_set/` holds the three split files gzipped (`train.jsonl.gz`, ...) and the build's
`manifest.json` (sha256 of each *uncompressed* file). Installing checks every hash before anything is
visible in the cache, and moves the whole set in at once: a corrupted package or a crash mid-install leaves
no set, never a partial one.

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

from meta_agent.swe.defaults import DEFAULT_TASKSET
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SPLITS
from meta_agent.swe.taskset import Manifest, read_manifest, tasksets_dir

SHIPPED_DIR = Path(__file__).resolve().parent / "default_set"


def shipped_manifest(folder: Path = SHIPPED_DIR) -> Manifest | None:
    """The shipped set's manifest, or None where this install carries none."""
    path = folder / "manifest.json"
    if not path.is_file():
        return None
    return Manifest.model_validate_json(path.read_text())


def install_shipped(folder: Path = SHIPPED_DIR) -> Manifest:
    """Install the shipped default set into the cache (replacing any set named default), all or nothing."""
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
        (stage / "manifest.json").write_text(manifest.model_dump_json(indent=2))
        dest = root / DEFAULT_TASKSET
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(stage, dest)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return manifest


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
