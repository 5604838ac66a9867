"""Crash-safe file writes: temp file in the same directory, fsync, rename."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def atomic_write_lines(path: Path, lines: Iterable[str]) -> int:
    """Write one line per item; the file appears complete or not at all. Returns the line count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    n = 0
    try:
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
    return n


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_lines(path, [text.rstrip("\n")])


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str))


def fresh_dir(path: Path) -> Path:
    """An empty directory at `path`: a step redone after a kill never sees the killed attempt's files."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
