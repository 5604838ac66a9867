"""What a session may bind: never the user's home as a whole, always parents before children."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sandboxes.base import Mount, SandboxError
from sandboxes.mounts import session_mounts


def test_the_home_directory_and_its_ancestors_are_refused(tmp_path: Path) -> None:
    for source in (Path.home(), Path("/")):
        with pytest.raises(SandboxError, match="home"):
            session_mounts(tmp_path, None, [Mount(source)])
    with pytest.raises(SandboxError, match="home"):
        session_mounts(Path.home(), None)


def test_a_missing_mount_source_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="nope"):
        session_mounts(tmp_path, None, [Mount(tmp_path / "nope")])


def test_binds_come_parents_first_with_the_workdir_writable(tmp_path: Path) -> None:
    inner = tmp_path / "work" / "data"
    inner.mkdir(parents=True)
    binds = session_mounts(tmp_path / "work", tmp_path, [Mount(inner)])
    depths = [len(m.source.parts) for m in binds]
    assert depths == sorted(depths)
    by_path = {m.source: m for m in binds}
    assert by_path[tmp_path / "work"].read_only is False
    assert by_path[inner].read_only is True
    assert Path(sys.prefix).resolve() in by_path  # the caller's venv is always there, read-only
    assert by_path[Path(sys.prefix).resolve()].read_only
