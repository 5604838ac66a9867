"""Reuse a finished training of the same harness tree instead of training it again, across runs.

A second `meta-agent evolve` on the same project trains main's harness again from the same policy with
the same seed, tasks and settings: the same experiment, paid twice (in the SWE demo ~5 min of its ~30 on
two cores). A training is keyed by everything it reads: the trained tree and the tree whose diagnostics
label it (by tree, not commit: a commit's hash carries its time, so the same harness in another run has
another commit), the starting policy's bytes, the root model, the carried-over rollouts, the training
tasks, steps, seed, sandbox limits, the run's settings, meta-agent's own code, the versions of the
libraries the harness trains with and the kind of machine (`machine_identity`). A hit copies the stored
outputs into the new output dir with the old commit's hash replaced by the new one, and says so in
`reused.json` beside them.

The store lives in the user cache (`META_AGENT_CACHE/reuse/trainings/`, beside the sealed evaluations'
memo `reuse/evaluations/`; `META_AGENT_REUSE` names another place, `off` turns both off), which no sandbox
mounts; an entry is written only from a training that
finished and was validated, as plain files under a size cap, and moved into place whole. What is reused
is what the same harness code wrote the first time, and it is validated again as it is read back, so a
hit is never more trusted than a fresh training. The one thing a hit does not reproduce: a harness whose
results depend on its commit's hash (`HARNESS_COMMIT`) or on the wall clock gets the first run's draw.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import git

from meta_agent import __version__
from meta_agent.fsutil import atomic_write_text, sha256_file
from meta_agent.paths import PACKAGE_DIR, cache_dir
from meta_agent.untrusted_files import tree_problems

ENV = "META_AGENT_REUSE"
ENTRY_MB = 512
"""An output dir larger than this (a full-weights checkpoint of a big model) is not stored."""
STORE_MB = 4096
"""Oldest entries are dropped once the store holds more than this."""
_LIBRARIES = ("torch", "transformers", "trl", "peft", "accelerate", "safetensors", "tokenizers")
_SKIP = {"report.json", "report.md", "report.html"}
_TEXT = {".json", ".jsonl", ".md", ".txt", ".yaml", ".yml", ".jinja"}
"""Files in which a stored path is replaced by this run's (a path's length can change)."""
"""Made by meta-agent from the rest after training (with the commit's hash in them): rebuilt on a hit."""


def reuse_root() -> Path | None:
    """Where trainings and sealed answers are kept across runs, or None when `META_AGENT_REUSE=off`."""
    given = os.environ.get(ENV, "")
    if given.lower() in {"off", "0", "false", "no"}:
        return None
    return Path(given) if given else cache_dir() / "reuse"


def reused_marker(out_dir: Path) -> Path:
    """Where a reused training says where it came from: beside its output dir, which sandboxes write (a
    harness cannot claim to be a reused training), not in it."""
    return out_dir.with_name(out_dir.name + ".reused.json")


def read_reused(out_dir: Path) -> dict[str, Any] | None:
    """The marker of a training that `fetch` copied into `out_dir` (None for a training that ran)."""
    try:
        record = json.loads(reused_marker(out_dir).read_text())
        return {"from": str(record["from"]), "seconds": float(record["seconds"]),
                "when": time.strftime("%Y-%m-%d %H:%M", time.localtime(float(record["stored"])))}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def root_identity(root: Path) -> list[list[object]]:
    """The root model's files by name, size and modification time (hashing a 15 GB model per training
    would cost more than a hit saves; a model replaced in place gets new times)."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [[p.relative_to(root).as_posix() if p != root else p.name, p.stat().st_size, p.stat().st_mtime_ns]
            for p in files]


def history_digest(repo: git.Repo, history: Path) -> str:
    """The carried-over rollouts, each naming the harness it ran under by tree, not by commit."""
    h = hashlib.sha256()
    trees: dict[str, str] = {}
    with history.open() as f:
        for line in f:
            record = json.loads(line)
            commit = record.get("harness_commit") if isinstance(record, dict) else None
            if isinstance(commit, str):
                if commit not in trees:
                    trees[commit] = repo.commit(commit).tree.hexsha
                record["harness_commit"] = trees[commit]
            h.update(json.dumps(record, sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def machine_identity() -> list[str]:
    """What decides a result's float rounding beside the code: the CPU's architecture, model and instruction
    set (which kernels torch picks) and the NVIDIA GPUs' models. A store copied to, or a cache dir shared
    with, another kind of machine is then not reused there. Read from /proc, not torch: the driver keys a
    training before it imports torch."""
    cpu = _read("/proc/cpuinfo").splitlines()
    model = next((line.split(":", 1)[1].strip() for line in cpu if line.startswith("model name")), "")
    flags = next((line.split(":", 1)[1].split() for line in cpu if line.startswith("flags")), [])
    gpus = sorted(line.split(":", 1)[1].strip() for info in Path("/proc/driver/nvidia/gpus").glob("*/information")
                  for line in _read(str(info)).splitlines() if line.startswith("Model:"))
    return [platform.machine(), model, hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:16], *gpus]


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


@lru_cache(maxsize=1)
def code_digest() -> str:
    """meta-agent's and the sandboxes' source, the versions of what the harness trains with, and the kind
    of machine it runs on (`machine_identity`)."""
    h = hashlib.sha256(__version__.encode() + json.dumps(machine_identity()).encode())
    for package in (PACKAGE_DIR, PACKAGE_DIR.parent / "sandboxes"):
        for path in sorted(package.rglob("*.py")):
            h.update(path.relative_to(package.parent).as_posix().encode() + b"\0" + path.read_bytes())
    for name in _LIBRARIES:
        try:
            h.update(f"{name}=={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name} absent".encode())
    return h.hexdigest()


def _changes(old: object, new: dict[str, str], escape: bool = False) -> list[tuple[bytes, bytes]]:
    """(old, new) byte strings for the names both sides have: 40-hex commit hashes, or (`escape`) paths as
    JSON writes them."""
    if not isinstance(old, dict):
        return []
    pairs = []
    for name, was in old.items():
        now = new.get(name)
        if not (isinstance(was, str) and isinstance(now, str)) or was == now or not was:
            continue
        if escape:
            pairs.append((json.dumps(was)[1:-1].encode(), json.dumps(now)[1:-1].encode()))
        elif len(was) == len(now) == 40:
            pairs.append((was.encode(), now.encode()))
    return pairs


def _policy_digest(policy: Path) -> str:
    """A checkpoint by its files' bytes, its manifest by what it says of the weights: the commit and paths it
    names differ between two runs that trained the same weights (gen 1 trains from gen 0's checkpoint)."""
    h = hashlib.sha256()
    for path in sorted(p for p in policy.rglob("*") if p.is_file()):
        name = path.relative_to(policy).as_posix()
        h.update(name.encode() + b"\0" + (_manifest_identity(path, policy) if name == "manifest.json"
                                          else sha256_file(path)).encode())
    return h.hexdigest()


def _manifest_identity(path: Path, policy: Path) -> str:
    try:
        manifest = json.loads(path.read_bytes())
    except ValueError:
        return sha256_file(path)
    if not isinstance(manifest, dict):
        return sha256_file(path)
    base = manifest.get("base_model")
    if isinstance(base, str) and Path(base).resolve() == policy.resolve():
        manifest["base_model"] = "itself"
    return json.dumps({k: v for k, v in manifest.items() if k not in {"harness_commit", "parent"}}, sort_keys=True)


@dataclass(frozen=True)
class TrainMemo:
    """The store, and what the run adds to every key (its domain and settings that change what trains)."""

    root: Path
    context: dict[str, Any]

    def key(self, *, repo: git.Repo, commit: str, diagnose_commit: str, policy: Path, root_policy: Path,
            tasks_file: Path, history: Path | None, **settings: Any) -> str | None:
        """The training's key; None when some input is not plain files (such a training is not stored)."""
        if policy.resolve() != root_policy.resolve() and (not policy.is_dir() or tree_problems(policy, limit=1)):
            return None
        parts = {
            "context": self.context, "code": code_digest(),
            "tree": repo.commit(commit).tree.hexsha, "diagnose": repo.commit(diagnose_commit).tree.hexsha,
            "root": [str(root_policy), root_identity(root_policy)],
            "policy": "root" if policy.resolve() == root_policy.resolve() else _policy_digest(policy),
            "tasks": sha256_file(tasks_file), "history": history_digest(repo, history) if history else None,
            "settings": settings,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()

    def fetch(self, key: str, out_dir: Path, commits: dict[str, str], paths: dict[str, str]) -> dict[str, Any] | None:
        """Copy entry `key` into the (empty) `out_dir`, each old commit hash in `commits` replaced by its
        new one in every file and each old path in `paths` (the starting policy, the output dir) by its new
        one in text files; its record (how long the training took), or None on a miss."""
        entry = self.root / key
        try:
            record = json.loads((entry / "entry.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or tree_problems(entry / "out", limit=1):
            return None
        shutil.copytree(entry / "out", out_dir, dirs_exist_ok=True)
        hashes = _changes(record.get("commits"), commits)  # same length: binary headers stay valid
        # the longest old path first: one that starts with a shorter one is replaced whole
        texts = hashes + sorted(_changes(record.get("paths"), paths, escape=True), key=lambda p: -len(p[0]))
        for path in sorted(p for p in out_dir.rglob("*") if p.is_file()):
            data = path.read_bytes()
            fixed = data
            for old, new in texts if path.suffix in _TEXT else hashes:
                fixed = fixed.replace(old, new)
            if fixed != data:
                path.write_bytes(fixed)
        os.utime(entry)  # recently used: the last to be dropped
        atomic_write_text(reused_marker(out_dir), json.dumps({"entry": str(entry), **record}, indent=2))
        return record

    def store(self, key: str, out_dir: Path, commits: dict[str, str], paths: dict[str, str], seconds: float) -> bool:
        """Keep a finished, validated training's outputs under `key`; False when it is not kept (links or
        special files, over `ENTRY_MB`, already there, or the store cannot be written)."""
        entry = self.root / key
        if entry.exists() or tree_problems(out_dir, limit=1):
            return False
        files = [p for p in out_dir.rglob("*") if p.is_file() and p.relative_to(out_dir).as_posix() not in _SKIP]
        if sum(p.stat().st_size for p in files) > ENTRY_MB << 20:
            return False
        staging = self.root / f".staging-{key}-{os.getpid()}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(staging, ignore_errors=True)
            for path in files:
                target = staging / "out" / path.relative_to(out_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            record = {"commits": commits, "paths": paths, "seconds": seconds, "stored": time.time(),
                      "from": str(out_dir)}
            atomic_write_text(staging / "entry.json", json.dumps(record, indent=2))
            staging.rename(entry)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            return False
        self._trim()
        return True

    def _trim(self) -> None:
        """Drop the least recently used entries past `STORE_MB`, and what a killed store left a day ago."""
        for stale in self.root.glob(".staging-*"):
            if time.time() - stale.stat().st_mtime > 86400:
                shutil.rmtree(stale, ignore_errors=True)
        entries = sorted((e for e in self.root.iterdir() if not e.name.startswith(".")),
                         key=lambda e: e.stat().st_mtime)
        sizes = {e: sum(p.stat().st_size for p in e.rglob("*") if p.is_file()) for e in entries}
        total = sum(sizes.values())
        for e in entries:
            if total <= STORE_MB << 20:
                break
            shutil.rmtree(e, ignore_errors=True)
            total -= sizes[e]
