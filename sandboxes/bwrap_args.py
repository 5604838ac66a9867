"""What a bwrap sandbox sees of the host, and how its first process joins the session cgroup."""

from __future__ import annotations

import json
import os
import select
from collections.abc import Sequence
from pathlib import Path

from sandboxes.base import Mount
from sandboxes.cgroups import SessionCgroup
from sandboxes.gpu import bwrap_gpu_args, nvidia_devices
from sandboxes.identity import SandboxIdentity

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only what programs need from /etc: never shadow, ssh keys, TLS private keys or other host
# configuration. Each entry is bound read-only into an otherwise empty /etc.
ETC_ENTRIES = (
    "alternatives",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "gitconfig",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "pki/tls/certs",
    "protocols",
    "resolv.conf",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "timezone",
)
SYNC_TIMEOUT_S = 30.0
UNSHARE_BUT_USER = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try")


class _Parents:
    """Creates the directories leading to each bind point as world-readable (0755) ones.

    bwrap makes missing parents 0700 and root-owned, which the unprivileged sandbox uid could
    not traverse; a parent inside an earlier bind already exists (it is the host's own).
    """

    def __init__(self) -> None:
        self.made: set[Path] = {Path("/")}
        self.bound: list[Path] = []

    def before(self, dest: Path) -> list[str]:
        args: list[str] = []
        for parent in reversed(dest.parents):
            if parent in self.made or any(parent.is_relative_to(b) for b in self.bound):
                continue
            self.made.add(parent)
            args += ["--perms", "0755", "--dir", str(parent)]
        return args

    def bind(self, dest: Path) -> None:
        self.bound.append(dest)


def etc_args(parents: _Parents) -> list[str]:
    """A fresh /etc holding only the allow-listed host entries, each bound read-only (nothing is copied)."""
    args = ["--perms", "0755", "--tmpfs", "/etc"]
    parents.made.add(Path("/etc"))
    for name in ETC_ENTRIES:
        source = Path("/etc") / name
        if source.exists():
            args += [*parents.before(source), "--ro-bind", str(source), str(source)]
    return [*args, "--remount-ro", "/etc"]


def sandbox_args(binds: Sequence[Mount], network: bool, identity: SandboxIdentity, gpus: bool = False, *,
                 tmpfs_bytes: int) -> list[str]:
    """bwrap options for a session: namespaces, a read-only system, the session's binds; its in-memory
    /tmp and /dev/shm hold at most `tmpfs_bytes` each (without a memory cgroup nothing else would bound them).

    As root no user namespace is made (bwrap needs none), so PID 1 keeps only CAP_SETUID and
    CAP_SETGID, with which `sandbox_init` drops to the sandbox uid before anything else runs.
    As any other user, bwrap maps that user into a user namespace and no further one may be made.
    """
    args = ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--as-pid-1"]
    if identity.switches:
        # No user namespace: bwrap's own (root mapped to root, setgroups denied) would keep uid 0 and
        # make the drop impossible. Every other namespace is new, as with --unshare-all.
        args += [*UNSHARE_BUT_USER, "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-all", "--unshare-user", "--disable-userns"]
    if network:
        args.append("--share-net")
    parents = _Parents()
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
            parents.bind(Path(path))
    # Order matters: /tmp is a fresh tmpfs *before* the binds, or it would hide a workdir under /tmp.
    # /proc/sys is bound read-only over the new /proc: kernel settings are never the sandbox's to change.
    args += [*etc_args(parents), "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev",
             "--perms", "1777", "--size", str(tmpfs_bytes), "--tmpfs", "/dev/shm",
             "--perms", "1777", "--size", str(tmpfs_bytes), "--tmpfs", "/tmp"]
    if gpus:
        args += bwrap_gpu_args(nvidia_devices())
    parents.made |= {Path("/proc"), Path("/dev"), Path("/tmp")}
    read_only_last: list[str] = []
    for bind in binds:
        args += parents.before(bind.source)
        if bind.hidden and bind.source.is_dir():
            # An empty stand-in; made read-only only at the end, so a later bind may still sit inside it.
            args += ["--perms", "0755", "--tmpfs", str(bind.source)]
            read_only_last += ["--remount-ro", str(bind.source)]
        elif bind.hidden:
            args += ["--ro-bind", "/dev/null", str(bind.source)]
        else:
            args += ["--ro-bind" if bind.read_only else "--bind", str(bind.source), str(bind.source)]
            parents.bind(bind.source)
    return [*args, *read_only_last, "--remount-ro", "/"]


def _read_child_pid(info_fd: int) -> int | None:
    """bwrap's --info-fd JSON: the pid of the sandbox's first process (None: bwrap died first)."""
    data = b""
    while not data.rstrip().endswith(b"}"):
        ready, _, _ = select.select([info_fd], [], [], SYNC_TIMEOUT_S)
        chunk = os.read(info_fd, 4096) if ready else b""
        if not chunk:
            return None
        data += chunk
    pid: int = json.loads(data)["child-pid"]
    return pid


class CgroupJoin:
    """Holds bwrap at --block-fd until its first process is in the session cgroup.

    Every process of the sandbox is then born inside the limits (a no-op without a cgroup).
    """

    def __init__(self, cgroup: SessionCgroup | None) -> None:
        self.cgroup = cgroup
        self._open: set[int] = set()
        self.child_fds: tuple[int, ...] = ()
        self.bwrap_args: list[str] = []
        if cgroup is not None:
            self.info_r, self.info_w = os.pipe()
            self.block_r, self.block_w = os.pipe()
            self._open = {self.info_r, self.info_w, self.block_r, self.block_w}
            self.child_fds = (self.info_w, self.block_r)
            self.bwrap_args = ["--info-fd", str(self.info_w), "--block-fd", str(self.block_r)]

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def __call__(self, _pid: int) -> None:
        """Call right after bwrap is spawned."""
        if self.cgroup is None:
            return
        for fd in self.child_fds:
            self._close(fd)
        child = _read_child_pid(self.info_r)
        if child is None:
            return  # bwrap failed before creating the sandbox; its stderr says why
        for procs in self.cgroup.procs_files:
            procs.write_text(str(child))
        os.write(self.block_w, b"1")

    def __enter__(self) -> CgroupJoin:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in list(self._open):
            self._close(fd)
