"""What a session binds from the host, checked once for every backend.

Every path is bound at the same absolute path inside the sandbox, so a caller's
`sys.executable`, workdir and mounts mean the same thing on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandboxes.base import Mount, SandboxError, host_python_mounts
from sandboxes.identity import SandboxIdentity, hand_over


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


def _check_readable(source: Path, identity: SandboxIdentity) -> None:
    """A read-only mount the sandbox uid cannot read fails later with a bare EACCES; say it here."""
    if not identity.switches:
        return
    mode = source.stat().st_mode
    need = 0o005 if source.is_dir() else 0o004
    if mode & need != need:
        raise SandboxError(
            f"sandbox mount {source} is not readable by the sandbox uid {identity.uid} (mode {mode & 0o777:o}): "
            f"sandboxed code never runs as root; make it readable, e.g. `chmod -R o+rX {source}`"
        )


def session_mounts(workdir: Path, scratch: Path | None, extra: Sequence[Mount] = (),
                   identity: SandboxIdentity | None = None) -> list[Mount]:
    """All binds of a session, parents before children so no bind hides another.

    The host Python runtime comes first (read-only), then `extra`, then the writable
    workdir and scratch dir; a later entry for the same path wins. Hidden entries that do
    not exist on this host are dropped. Every writable path is handed to `identity`.
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
            if mount.hidden:
                continue
            raise SandboxError(f"sandbox mount source {mount.source} does not exist")
        if not mount.hidden:
            _refuse_exposing_home(source, "mount")
            if mount.read_only and identity is not None:
                _check_readable(source, identity)
        by_path[source] = Mount(source, mount.read_only, mount.hidden, mount.target)
    by_path[workdir] = Mount(workdir, read_only=False)
    if scratch is not None:
        by_path[scratch] = Mount(scratch, read_only=False)
    visible = [m.source for m in by_path.values() if not m.hidden]
    # A hidden path matters only inside something that is shown; elsewhere it is absent anyway.
    kept = [m for m in by_path.values()
            if not m.hidden or any(m.source.is_relative_to(v) and m.source != v for v in visible)]
    binds = sorted(kept, key=lambda m: (len(m.source.parts), str(m.source)))
    if identity is not None:
        for bind in binds:
            if not bind.read_only and not bind.hidden:
                hand_over(bind.source, identity)
    return binds
