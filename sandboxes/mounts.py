"""What a session binds from the host, checked once for every backend.

Every path is bound at the same absolute path inside the sandbox, so a caller's
`sys.executable`, workdir and mounts mean the same thing on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandboxes.base import Mount, SandboxError, host_python_mounts


def _home() -> Path:
    return Path.home().resolve()


def _refuse_exposing_home(path: Path, what: str) -> None:
    """The user's home (credentials, keys, caches of other projects) is never visible as a whole."""
    home = _home()
    if path == Path("/") or path == home or path in home.parents:
        raise SandboxError(
            f"refusing to expose {what} {path}: it would make {home} (the user's home) visible in the "
            "sandbox; mount a narrower directory instead"
        )


def session_mounts(workdir: Path, scratch: Path | None, extra: Sequence[Mount] = ()) -> list[Mount]:
    """All binds of a session, parents before children so no bind hides another.

    The host Python runtime comes first (read-only), then `extra`, then the writable
    workdir and scratch dir; a later entry for the same path wins.
    """
    if not workdir.is_dir():
        raise SandboxError(f"sandbox workdir {workdir} is not a directory; create or check it out first")
    _refuse_exposing_home(workdir, "workdir")
    by_path: dict[Path, Mount] = {}
    for mount in host_python_mounts():
        by_path[mount.source] = mount
    for mount in extra:
        source = mount.source.resolve()
        if not source.exists():
            raise SandboxError(f"sandbox mount source {mount.source} does not exist")
        _refuse_exposing_home(source, "mount")
        by_path[source] = Mount(source, mount.read_only)
    by_path[workdir] = Mount(workdir, read_only=False)
    if scratch is not None:
        by_path[scratch] = Mount(scratch, read_only=False)
    return sorted(by_path.values(), key=lambda m: (len(m.source.parts), str(m.source)))
