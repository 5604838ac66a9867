"""Crash-safe file writes: temp file in the same directory, fsync, rename."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterable
from pathlib import Path

from sandboxes.cgroups import pid_alive


def _umask() -> int:
    """The process umask, read without changing it (os.umask would, for a moment, in every thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_write_lines(path: Path, lines: Iterable[str], mode: int | None = None) -> int:
    """Write one line per item; the file appears complete or not at all. Returns the line count.

    The rename replaces whatever `path` was (a link is replaced, never followed). The file gets
    `mode`, by default what `open()` would give (0666 less the umask), not mkstemp's private 0600:
    sandboxes read inputs as an unprivileged uid.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path) + f"{_HOST}.{os.getpid()}.", suffix=".tmp")
    n = 0
    try:
        os.fchmod(fd, mode if mode is not None else 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")
                n += 1
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sweep_stale_temps(path)
    return n


_HOST = socket.gethostname().replace(".", "_")


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def sweep_stale_temps(path: Path) -> list[Path]:
    """Remove the temp files that writers of `path` on this host left when they were killed mid-write.

    A temp is named `.NAME.HOST.PID.RANDOM.tmp`: it is stale when its process is gone. One whose process
    still lives (another thread of this one, say) or that another host wrote (a shared run folder) is left
    alone, so a sweep never removes a write in progress.
    """
    removed: list[Path] = []
    prefix = _temp_prefix(path)
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return removed
    for name in names:
        parts = name[len(prefix):].split(".")
        if len(parts) < 4 or parts[0] != _HOST or not parts[1].isdigit() or pid_alive(int(parts[1])):
            continue
        with contextlib.suppress(OSError):
            (path.parent / name).unlink()
            removed.append(path.parent / name)
    return removed


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    atomic_write_lines(path, [text.rstrip("\n")], mode)


def fresh_dir(path: Path) -> Path:
    """An empty directory at `path`: a step redone after a kill never sees the killed attempt's files."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def readable_by_sandboxes(path: Path) -> Path:
    """Open a tree meta-agent made (a model, a cache) to other users for reading: sandboxes read it as an
    unprivileged uid, and some writers (safetensors, mkdtemp) make files private. Links are left alone."""
    for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
        if item.is_symlink():
            continue
        mode = item.stat().st_mode
        want = 0o005 if item.is_dir() else 0o004
        if mode & want != want:
            item.chmod(mode | want | (want << 3))
    return path


def sha256_file(path: Path) -> str:
    """The file's SHA-256, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
