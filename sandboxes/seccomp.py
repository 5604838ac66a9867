"""A seccomp filter for bwrap sessions: the syscalls a training job never needs fail with EPERM.

Docker applies its own default profile; this is the bwrap counterpart, a deny list in the spirit
of that profile: kernel modules, mounts and namespaces, ptrace and cross-process memory access,
keyrings, BPF, perf, io_uring, clocks, reboot/swap/kexec. `clone` is allowed only without
namespace flags, and `clone3` (whose flags live in memory a filter cannot read) answers ENOSYS,
so libc falls back to `clone`. Syscalls of a foreign ABI (i386, x32) are refused too.

The program is classic BPF (struct sock_filter) as `bwrap --seccomp FD` reads it.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from dataclasses import dataclass

# BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
# struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64, little-endian).
_NR, _ARCH, _ARG0_LOW = 0, 4, 16

NAMESPACE_FLAGS = 0x7E020000
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET."""

DENIED = (
    "mount", "umount2", "pivot_root", "swapon", "swapoff", "reboot", "sethostname", "setdomainname",
    "iopl", "ioperm", "init_module", "finit_module", "delete_module", "quotactl", "acct", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "kexec_load", "kexec_file_load", "bpf", "perf_event_open",
    "userfaultfd", "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "syslog", "unshare", "setns", "fanotify_init",
    "vhangup", "uselib", "_sysctl", "create_module", "get_kernel_syms", "query_module", "nfsservctl",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "pidfd_getfd",
)


@dataclass(frozen=True)
class Abi:
    audit_arch: int
    numbers: dict[str, int]
    """Syscall numbers of this ABI (names it lacks are simply absent)."""
    foreign_from: int | None = None
    """Numbers at or above this belong to another ABI sharing the arch value (x86-64's x32)."""


X86_64 = Abi(0xC000003E, {
    "mount": 165, "umount2": 166, "pivot_root": 155, "swapon": 167, "swapoff": 168, "reboot": 169,
    "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173, "init_module": 175,
    "finit_module": 313, "delete_module": 176, "quotactl": 179, "acct": 163, "settimeofday": 164,
    "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159, "kexec_load": 246, "kexec_file_load": 320,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "lookup_dcookie": 212, "syslog": 103, "unshare": 272, "setns": 308,
    "fanotify_init": 300, "vhangup": 153, "uselib": 134, "_sysctl": 156, "create_module": 174,
    "get_kernel_syms": 177, "query_module": 178, "nfsservctl": 180, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438,
    "clone": 56, "clone3": 435,
}, foreign_from=0x40000000)

AARCH64 = Abi(0xC00000B7, {
    "mount": 40, "umount2": 39, "pivot_root": 41, "swapon": 224, "swapoff": 225, "reboot": 142,
    "sethostname": 161, "setdomainname": 162, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "quotactl": 60, "acct": 89, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266,
    "adjtimex": 171, "kexec_load": 104, "kexec_file_load": 294, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "keyctl": 219, "add_key": 217, "request_key": 218, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "open_by_handle_at": 265, "name_to_handle_at": 264,
    "lookup_dcookie": 18, "syslog": 116, "unshare": 97, "setns": 268, "fanotify_init": 262, "vhangup": 58,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "pidfd_getfd": 438, "clone": 220, "clone3": 435,
})

ABIS = {"x86_64": X86_64, "amd64": X86_64, "aarch64": AARCH64, "arm64": AARCH64}


def host_abi() -> Abi | None:
    return ABIS.get(platform.machine().lower())


class _Program:
    """A tiny assembler: instructions with symbolic jump targets, resolved at the end."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = b""
        for i, (code, jt, jf, k) in enumerate(self.code):
            offsets = [self.labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
            if not all(0 <= o < 256 for o in offsets):
                raise ValueError(f"seccomp jump out of range at instruction {i}")
            out += struct.pack("<HBBI", code, offsets[0], offsets[1], k)
        return out


def filter_program(abi: Abi) -> bytes:
    """The BPF program for `abi` (bytes of struct sock_filter[])."""
    p = _Program()
    p.op(_LD_W_ABS, _ARCH)
    p.op(_JEQ_K, abi.audit_arch, jt=0, jf="deny")
    p.op(_LD_W_ABS, _NR)
    if abi.foreign_from is not None:
        p.op(_JGE_K, abi.foreign_from, jt="deny")
    for name in DENIED:
        if name in abi.numbers:
            p.op(_JEQ_K, abi.numbers[name], jt="deny")
    p.op(_JEQ_K, abi.numbers["clone3"], jt="enosys")
    p.op(_JEQ_K, abi.numbers["clone"], jt=0, jf="allow")
    p.op(_LD_W_ABS, _ARG0_LOW)
    p.op(_JSET_K, NAMESPACE_FLAGS, jt="deny")
    p.label("allow")
    p.op(_RET_K, RET_ALLOW)
    p.label("deny")
    p.op(_RET_K, RET_ERRNO | errno.EPERM)
    p.label("enosys")
    p.op(_RET_K, RET_ERRNO | errno.ENOSYS)
    return p.assemble()


def filter_fd() -> int | None:
    """A readable fd holding the host's filter (for `bwrap --seccomp`); None on an ABI we have no table for."""
    abi = host_abi()
    if abi is None:
        return None
    fd = os.memfd_create("meta-agent-seccomp", 0)
    os.write(fd, filter_program(abi))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
