"""The test environment of a project: the sandbox's Python (which has pytest) plus the project's extra deps.

Extra deps are pip-installed once, on the host with network, into a directory keyed by the
requirement list; sandboxes (no network) mount it read-only and put it on sys.path.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from meta_agent.paths import cache_dir
from meta_agent.swe.errors import SweTaskError
from sandboxes import Mount


def require_pytest() -> None:
    """Tests run with the host interpreter inside the sandbox, so that interpreter needs pytest."""
    if importlib.util.find_spec("pytest") is None:
        raise SweTaskError(f"SWE tasks run their tests with pytest, which {sys.executable} lacks: "
                           f"`{sys.executable} -m pip install pytest`")


def deps_dir(deps: list[str]) -> Path | None:
    """The directory holding `deps` (installed now if missing); None when there are none.

    The path is resolved: sandboxes bind a mount at its real path, so a cache reached through
    a symlink must not leave the unresolved path on sys.path.
    """
    if not deps:
        return None
    key = hashlib.sha256("\n".join(sorted(deps)).encode()).hexdigest()[:16]
    target = (cache_dir() / "swe" / "envs").resolve() / key
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{key}-"))
    try:
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(tmp), *deps]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-8:])
            raise SweTaskError(f"could not install test deps {deps} (exit {done.returncode}):\n{tail}")
        (tmp / ".complete").write_text("\n".join(deps) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def deps_mounts(path: Path | None) -> list[Mount]:
    return [Mount(path, read_only=True)] if path is not None else []
