"""Per-session cgroups: memory, pids and CPU limits over everything a bwrap session starts.

The layout is detected at run time: cgroup v1 where the controllers have their own
hierarchies (this kind of machine), v2 where the unified hierarchy carries them. A
session's cgroups are children of this process's own, so nothing system-wide changes;
their names carry the owner's pid so that leftovers of a killed owner are swept.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import uuid
from abc import ABC, abstractmethod
from pathlib import Path

from sandboxes.base import Limits

PREFIX = "meta-agent-"
_NAME_RE = re.compile(rf"^{PREFIX}(\d+)-[0-9a-f]+$")
CPU_PERIOD_US = 100_000
V1_CONTROLLERS = ("memory", "pids", "cpu")


class CgroupUnavailable(RuntimeError):
    """No usable cgroup here; the message says why (the caller falls back and reports it)."""


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _keyed_value(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (owners of stale session resources are not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _procs(directory: Path) -> list[int]:
    try:
        return [int(p) for p in _read(directory / "cgroup.procs").split()]
    except FileNotFoundError:
        return []


def _kill_procs(directory: Path, deadline_s: float = 10.0) -> None:
    """SIGKILL until the cgroup is empty; new forks land in the same cgroup, so this converges."""
    deadline = time.monotonic() + deadline_s
    while (pids := _procs(directory)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def _rmdir(directory: Path, deadline_s: float = 5.0) -> None:
    """rmdir a cgroup, retrying while its killed tasks are still being torn down."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            _kill_procs(directory, deadline_s=0.5)
            time.sleep(0.01)


def _sweep_stale(parent: Path) -> None:
    """Remove session cgroups whose owner died without closing them (e.g. SIGKILL)."""
    try:
        children = list(parent.iterdir())
    except OSError:
        return
    for child in children:
        match = _NAME_RE.match(child.name)
        if match and int(match.group(1)) != os.getpid() and not pid_alive(int(match.group(1))):
            try:
                _kill_procs(child, deadline_s=1.0)
                _rmdir(child, deadline_s=1.0)
            except OSError:
                pass


class SessionCgroup(ABC):
    """The cgroup(s) of one session: join by writing a pid to every file in `procs_files`."""

    version: str
    procs_files: tuple[Path, ...]

    @abstractmethod
    def oom_kills(self) -> int:
        """How many processes the kernel has OOM-killed in this cgroup so far."""

    @abstractmethod
    def pids(self) -> list[int]:
        """Processes currently in the session."""

    @abstractmethod
    def kill_all(self) -> None:
        """SIGKILL everything in the session (leftovers of a run, or at close)."""

    @abstractmethod
    def remove(self) -> None:
        """Kill what is left and delete the cgroup(s); idempotent."""


class CgroupV1(SessionCgroup):
    """One child cgroup in each of the memory, pids and cpu hierarchies."""

    version = "v1"

    def __init__(self, dirs: dict[str, Path], limits: Limits) -> None:
        self.dirs = dirs
        self.procs_files = tuple(d / "cgroup.procs" for d in dirs.values())
        created: list[Path] = []
        try:
            for directory in dirs.values():
                _sweep_stale(directory.parent)
                directory.mkdir()
                created.append(directory)
            memory = str(limits.memory_mb * 1024 * 1024)
            _write(dirs["memory"] / "memory.limit_in_bytes", memory)
            if (dirs["memory"] / "memory.memsw.limit_in_bytes").exists():
                # Without this the limit only bounds RAM and a process could spill into swap.
                _write(dirs["memory"] / "memory.memsw.limit_in_bytes", memory)
            _write(dirs["pids"] / "pids.max", str(limits.pids))
            _write(dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write(dirs["cpu"] / "cpu.cfs_quota_us", str(max(1000, int(limits.cpus * CPU_PERIOD_US))))
        except OSError as err:
            for directory in reversed(created):
                _rmdir(directory, deadline_s=1.0)
            raise CgroupUnavailable(f"cgroup v1: cannot set up {err.filename}: {err.strerror}") from err

    def oom_kills(self) -> int:
        return _keyed_value(_read(self.dirs["memory"] / "memory.oom_control"), "oom_kill")

    def pids(self) -> list[int]:
        return _procs(self.dirs["pids"])

    def kill_all(self) -> None:
        _kill_procs(self.dirs["pids"])

    def remove(self) -> None:
        self.kill_all()
        for directory in self.dirs.values():
            _rmdir(directory)


class CgroupV2(SessionCgroup):
    """One child of this process's cgroup in the unified hierarchy."""

    version = "v2"

    def __init__(self, directory: Path, limits: Limits) -> None:
        self.dir = directory
        self.procs_files = (directory / "cgroup.procs",)
        parent = directory.parent
        _sweep_stale(parent)
        try:
            enabled = set(_read(parent / "cgroup.subtree_control").split())
            missing = {"memory", "pids", "cpu"} - enabled
            if missing:
                _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(missing)))
        except OSError as err:
            raise CgroupUnavailable(
                f"cgroup v2: cannot enable memory/pids/cpu controllers in {parent} ({err.strerror}); "
                "run meta-agent in a delegated cgroup, e.g. `systemd-run --user --scope -p Delegate=yes ...`"
            ) from err
        try:
            directory.mkdir()
            _write(directory / "memory.max", str(limits.memory_mb * 1024 * 1024))
            if (directory / "memory.swap.max").exists():
                _write(directory / "memory.swap.max", "0")
            _write(directory / "pids.max", str(limits.pids))
            _write(directory / "cpu.max", f"{max(1000, int(limits.cpus * CPU_PERIOD_US))} {CPU_PERIOD_US}")
        except OSError as err:
            _rmdir(directory, deadline_s=1.0)
            raise CgroupUnavailable(f"cgroup v2: cannot set up {err.filename}: {err.strerror}") from err

    def oom_kills(self) -> int:
        return _keyed_value(_read(self.dir / "memory.events"), "oom_kill")

    def pids(self) -> list[int]:
        return _procs(self.dir)

    def kill_all(self) -> None:
        kill_file = self.dir / "cgroup.kill"
        if kill_file.exists():
            _write(kill_file, "1")
        _kill_procs(self.dir)

    def remove(self) -> None:
        self.kill_all()
        _rmdir(self.dir)


def _own_cgroups() -> dict[str, str]:
    """controller -> this process's cgroup path; the v2 entry is keyed by ''."""
    paths: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _hier, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


def _mounts() -> dict[str, tuple[Path, str]]:
    """controller -> (mount point, root inside the hierarchy) of its v1 mount; '' -> the v2 mount."""
    found: dict[str, tuple[Path, str]] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fstype, _source, options = ([*right.split(), "", ""])[:3]
        fields = left.split()
        mount = (Path(fields[4]), fields[3])
        if fstype == "cgroup2":
            found.setdefault("", mount)
        elif fstype == "cgroup":
            for option in options.split(","):
                if option in V1_CONTROLLERS:
                    found.setdefault(option, mount)
    return found


def _dir_of(mount: tuple[Path, str], own_path: str) -> Path:
    """Where this process's cgroup appears under a mount (the mount may show a subtree only)."""
    mount_point, root = mount
    if root != "/" and own_path.startswith(root):
        own_path = own_path[len(root) :]
    return mount_point / own_path.lstrip("/")


def _session_name() -> str:
    return f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def create_session_cgroup(limits: Limits) -> SessionCgroup:
    """A fresh cgroup for one session with `limits` applied; raises CgroupUnavailable saying why not."""
    try:
        mounts, own = _mounts(), _own_cgroups()
    except OSError as err:
        raise CgroupUnavailable(f"cannot read cgroup layout: {err}") from err
    name = _session_name()
    if all(c in mounts for c in V1_CONTROLLERS):
        dirs = {c: _dir_of(mounts[c], own.get(c, "/")) / name for c in V1_CONTROLLERS}
        return CgroupV1(dirs, limits)
    if "" in mounts:
        own_dir = _dir_of(mounts[""], own.get("", "/"))
        controllers = own_dir / "cgroup.controllers"
        if controllers.exists() and {"memory", "pids", "cpu"} <= set(_read(controllers).split()):
            return CgroupV2(own_dir / name, limits)
    raise CgroupUnavailable("no cgroup hierarchy with the memory, pids and cpu controllers is mounted")


def describe() -> str:
    """One line for `meta-agent sandbox doctor`: which cgroup layout a session would get."""
    try:
        cgroup = create_session_cgroup(Limits(memory_mb=64, cpus=1, pids=8))
    except CgroupUnavailable as err:
        return f"unavailable ({err})"
    cgroup.remove()
    return f"{cgroup.version}, writable (memory, pids, cpu limits enforced per session)"
