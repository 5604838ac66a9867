"""Who sandboxed code runs as: never the host's uid 0.

When meta-agent itself runs as root (as on CI machines and many GPU boxes), everything in a
sandbox runs as a dedicated unprivileged uid instead: root in a sandbox without a user
namespace *is* host root to the kernel (it may write `/proc/sys`, and with it make the kernel
run a program of its choosing as host root). As any other user, sandboxed code runs as that
user, which is already unprivileged. Writable paths are handed to the sandbox uid when a
session opens; what the sandbox writes stays readable by the trusted side (root).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import SandboxError

UID_ENV = "META_AGENT_SANDBOX_UID"
DEFAULT_SANDBOX_UID = 64_500
"""Unused by Debian's base system and distinct from `nobody`, which other services share."""


@dataclass(frozen=True)
class SandboxIdentity:
    uid: int
    gid: int

    @property
    def switches(self) -> bool:
        """True when the trusted side is root and sessions must drop to this uid."""
        return os.geteuid() == 0

    def describe(self) -> str:
        how = "dropped from root before any sandboxed command starts" if self.switches else "the caller's own uid"
        return f"uid {self.uid}, gid {self.gid} ({how})"


def sandbox_identity() -> SandboxIdentity:
    """The uid/gid every sandboxed command runs as; SandboxError for a setting that would give it root."""
    if os.geteuid() != 0:
        return SandboxIdentity(os.geteuid(), os.getegid())
    raw = os.environ.get(UID_ENV, str(DEFAULT_SANDBOX_UID))
    try:
        uid = int(raw)
    except ValueError:
        raise SandboxError(f"{UID_ENV}={raw!r} is not a number; unset it or give an unused uid such as "
                           f"{DEFAULT_SANDBOX_UID}") from None
    if uid <= 0 or uid >= 2**32 - 1:
        raise SandboxError(f"{UID_ENV}={raw} would run sandboxed code as host root (or an invalid uid); "
                           f"unset it or give an unused, unprivileged uid such as {DEFAULT_SANDBOX_UID}")
    return SandboxIdentity(uid, uid)


def hand_over(path: Path, identity: SandboxIdentity) -> None:
    """Make `path` (and everything under it) writable by the sandbox uid; links are not followed."""
    if not identity.switches:
        return
    os.lchown(path, identity.uid, identity.gid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), identity.uid, identity.gid)
