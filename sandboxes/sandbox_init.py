"""PID 1 inside a sandbox session. Runs *inside* the sandbox: standard library only.

Started as `python -I -S sandbox_init.py IN_FD OUT_FD [UID:GID]`. With UID:GID (bwrap started by
root) it first drops to that unprivileged uid, with no supplementary groups and no new privileges,
so nothing in the sandbox ever runs as host root. It
- reaps orphans (it is the init of the session's pid namespace),
- on `reset`, kills every other process so nothing from one run survives into the next
  (a fork bomb, a daemonised helper), and reports the OOM kills its memory cgroup has seen and
  which of the session's size-capped tmpfs mounts the run filled up (emptied of what it wrote there),
- on `spawn` (bwrap), starts a command with posix_spawn and reports its exit status, so a
  run costs one spawn instead of a new set of namespaces,
- exits when its channel closes, which happens when the session's owner goes away; as the
  init of the pid namespace its exit takes every process of the session with it.

Messages are 4-byte big-endian length + JSON. A `spawn` request carries the command's
stdout and stderr as file descriptors (SCM_RIGHTS) when the channel is a unix socket.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Mapping
from typing import Any

HEADER = struct.Struct(">I")
MAX_FDS = 4
KILL_DEADLINE_S = 10.0
MEASURE_S = 1.0
"""How long PID 1 may spend measuring what a command holds before it kills it."""
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38


def encode(message: dict[str, Any]) -> bytes:
    """One message on the wire."""
    payload = json.dumps(message).encode()
    return HEADER.pack(len(payload)) + payload


class Channel:
    """Length-prefixed JSON over a pipe pair (docker attach) or one unix socket (bwrap)."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self.sock = socket.socket(fileno=os.dup(in_fd)) if stat.S_ISSOCK(os.fstat(in_fd).st_mode) else None

    def _read_exactly(self, size: int, fds: list[int]) -> bytes | None:
        data = b""
        while len(data) < size:
            if self.sock is not None:
                chunk, ancdata, _flags, _addr = self.sock.recvmsg(
                    size - len(data), socket.CMSG_SPACE(MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC
                )
                for level, kind, blob in ancdata:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        received = array.array("i")
                        received.frombytes(blob[: len(blob) - len(blob) % received.itemsize])
                        fds.extend(received)
            else:
                chunk = os.read(self.in_fd, size - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def receive(self) -> tuple[dict[str, Any] | None, list[int]]:
        """The next message and the fds sent with it; (None, []) once the peer is gone."""
        fds: list[int] = []
        header = self._read_exactly(HEADER.size, fds)
        if header is None:
            return None, fds
        payload = self._read_exactly(HEADER.unpack(header)[0], fds)
        return (json.loads(payload) if payload is not None else None), fds

    def send(self, message: dict[str, Any]) -> None:
        data = encode(message)
        while data:
            data = data[os.write(self.out_fd, data) :]


def _live_others() -> list[int]:
    """Processes in this pid namespace other than us that are not already dead (zombies)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            pids.append(int(name))
    return pids


def _oom_kills() -> int | None:
    """OOM kills in this sandbox's memory cgroup, where it is visible from inside (docker)."""
    for path, key in (
        ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
        ("/sys/fs/cgroup/memory.events", "oom_kill"),
    ):
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value)
        except OSError:
            continue
    return None


def _held_memory_mb() -> int | None:
    """The private memory the processes other than us hold, in MB (proportional: a page two forks share counts
    half in each): what a memory limit counts that no reclaim can free without swap. A lower bound when there
    are too many processes to read within MEASURE_S: the kill it comes before waits for no count. None when no
    process's figure could be read (a kernel without smaps_rollup, or a command that hid them all)."""
    total_kb, read = 0, 0
    stop = time.monotonic() + MEASURE_S
    for pid in _live_others():
        if time.monotonic() > stop:
            break
        fields: dict[str, int] = {}
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    name, _, rest = line.partition(":")
                    if name in ("Pss_Anon", "Anonymous"):
                        fields[name] = int(rest.split()[0])
        except (OSError, ValueError, IndexError):
            continue  # gone, unreadable, or a kernel without the file
        read += 1
        total_kb += fields.get("Pss_Anon", fields.get("Anonymous", 0))
    return total_kb // 1024 if read else None


def remove_changed_since(root: str, since_ns: int, spare: Mapping[tuple[int, int], int] | None = None) -> None:
    """Delete every entry under `root` created or changed at or after `since_ns` (ctime, which no program can
    set back), deepest first, but those in `spare` ((st_dev, st_ino) -> ctime) still unchanged; never follows
    a link nor leaves root's filesystem. Call it when nothing writes there."""
    try:
        device = os.lstat(root).st_dev
    except OSError:
        return
    spare = spare or {}
    dirs: list[str] = []
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            entries = _entries(top)
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            changed = info.st_ctime_ns >= since_ns and spare.get((info.st_dev, info.st_ino)) != info.st_ctime_ns
            if stat.S_ISDIR(info.st_mode):
                if info.st_dev == device:  # a mount inside (bwrap's scratch under /tmp) is not this run's to clear
                    stack.append(entry.path)
                    if changed:
                        dirs.append(entry.path)
            elif changed:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
    for path in reversed(dirs):
        with contextlib.suppress(OSError):
            os.rmdir(path)  # fails, as it should, while older files are still in it


def _entries(path: str) -> list[os.DirEntry[str]]:
    """A directory's entries; one whose mode hid them or forbade deleting them is opened up first (it is ours)."""
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IRWXU)
    with os.scandir(path) as it:
        return list(it)


def _is_full(path: str) -> bool:
    """A size-capped tmpfs with no free block or inode left: a write into it failed with ENOSPC."""
    try:
        info = os.statvfs(path)
    except OSError:
        return False
    return (info.f_blocks > 0 and info.f_bavail == 0) or (info.f_files > 0 and info.f_favail == 0)


def _resolve(program: str, env: dict[str, str]) -> str:
    if "/" in program:
        return program
    for directory in env.get("PATH", "/usr/bin:/bin").split(":"):
        candidate = os.path.join(directory or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(2, "command not found in PATH", program)


class Init:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.current: int | None = None
        self.held_at_kill_mb: int | None = None
        """What the run held when it was killed (timed out, or over the disk quota); sent with the next reset."""
        # What changed in a tmpfs after the last reset, the current run wrote. (The kernel stamps changes with a
        # clock up to a tick behind this one: what a run writes in its first few ms and never again looks older.)
        self.last_reset_ns = time.time_ns()

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.current:
                self.current = None
                self.channel.send({"event": "exited", "code": os.waitstatus_to_exitcode(status)})

    def kill_all(self) -> bool:
        """SIGKILL everything but us until nothing is left; False if something would not die."""
        deadline = time.monotonic() + KILL_DEADLINE_S
        while True:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
            self.reap()
            if not _live_others():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)

    def spawn(self, request: dict[str, Any], fds: list[int]) -> None:
        env = dict(request["env"])
        devnull = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 0)]
        actions += [(os.POSIX_SPAWN_DUP2, fd, target) for fd, target in zip(fds, (1, 2), strict=False)]
        try:
            os.chdir(request["cwd"])
            # SIGXFSZ back to its default (Python ignores it, and children inherit that): a command that
            # reaches the file-size limit stops there, as it would when started from a shell.
            self.current = os.posix_spawn(
                _resolve(request["argv"][0], env), request["argv"], env, file_actions=actions, setsid=True,
                setsigdef=(signal.SIGXFSZ,),
            )
        except OSError as err:
            message = f"sandbox: cannot run {request['argv'][0]!r} in {request['cwd']}: {err.strerror}\n"
            if len(fds) > 1:
                os.write(fds[1], message.encode())
            code = 127 if isinstance(err, FileNotFoundError) else 126
            self.channel.send({"event": "exited", "code": code})
        finally:
            os.chdir("/")
            for fd in (devnull, *fds):
                os.close(fd)

    def handle(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        if op == "spawn":
            self.held_at_kill_mb = None
            self.spawn(message, fds)
            return
        for fd in fds:
            os.close(fd)
        if op == "kill":
            # Measured before the kill: a command stalled at its memory limit reads as out of memory, not slow.
            self.held_at_kill_mb = _held_memory_mb()
            self.channel.send({"event": "killed", "clean": self.kill_all()})
        elif op == "reset":
            clean = self.kill_all()
            # Nothing runs now, so what the run wrote into a tmpfs it filled can go (it is the owner's memory).
            full = [path for path in message.get("tmpfs", []) if _is_full(path)]
            for path in full:
                remove_changed_since(path, self.last_reset_ns + 1)
            self.last_reset_ns = time.time_ns()
            self.channel.send({"event": "reset", "clean": clean, "oom_kills": _oom_kills(), "full": full,
                               "held_at_kill_mb": self.held_at_kill_mb})
            self.held_at_kill_mb = None
        else:
            self.channel.send({"event": "error", "detail": f"unknown op {op!r}"})

    def serve(self) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.channel.send({"event": "ready", "oom_kills": _oom_kills()})
        while True:
            readable, _, _ = select.select([self.channel.in_fd, wake_r], [], [])
            if wake_r in readable:
                os.read(wake_r, 4096)
                self.reap()
            if self.channel.in_fd in readable:
                message, fds = self.channel.receive()
                if message is None:
                    return  # the owner is gone: exiting ends the whole session
                self.handle(message, fds)


def drop_privileges(spec: str) -> None:
    """Become UID:GID for good (real, effective and saved ids; no groups); refuse to go on as root."""
    uid, gid = (int(part) for part in spec.split(":"))
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if 0 in os.getresuid() or 0 in os.getresgid():
        raise SystemExit("sandbox_init: still root after dropping privileges; refusing to run anything")


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if len(sys.argv) > 3:
        drop_privileges(sys.argv[3])
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SystemExit("sandbox_init: cannot set no_new_privs; refusing to run anything")
    # Other processes run as the same uid: without this they could ptrace us or use /proc/1/fd.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    # As the init of its pid namespace it gets only signals it handles: take none from the commands.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    in_fd, out_fd = int(sys.argv[1]), int(sys.argv[2])
    for fd in {in_fd, out_fd}:
        os.set_inheritable(fd, False)  # commands must not be able to talk to the owner as us
    Init(Channel(in_fd, out_fd)).serve()


if __name__ == "__main__":
    main()
