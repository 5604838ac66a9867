"""Runs ONE test of ONE program: the only place the sealed evaluator executes a model's code.

runner.py starts it as `python -s -P child.py PAYLOAD RESULT` in a fresh interpreter per test, so a
program never shares memory with other tests, and the expected outputs of stdin/stdout and call
tests never enter this process at all (runner.py compares them). Standard library only: the file
is copied into the sandbox on its own, and imports as little as possible (marshal instead of json,
no typing at run time): interpreter start-up is most of a test's cost.

PAYLOAD and RESULT are marshal files; RESULT receives {"status", "detail", "value"}. A process that
ends without writing it (os._exit, a signal) is judged by runner.py from its exit status.
"""

from __future__ import annotations

import builtins
import errno
import marshal
import os
import resource
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

PLAIN = (int, float, complex, bool, str, bytes, type(None), list, tuple, dict, set, frozenset)
"""Values a function under test may return: plain data only, so an object whose __eq__ always
answers True cannot pass an `assert candidate(x) == y`."""


class ProcessCreationBlocked(PermissionError):
    """A test tried to start a process; tests never need one, fork bombs always do."""


def _limit(memory_mb: int, cpu_s: int, file_bytes: int) -> None:
    for which, value in ((resource.RLIMIT_AS, memory_mb * 2**20), (resource.RLIMIT_CPU, cpu_s),
                         (resource.RLIMIT_FSIZE, file_bytes), (resource.RLIMIT_CORE, 0)):
        try:  # noqa: SIM105 - contextlib would cost an import in every test process
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass  # a hard limit already below ours: the lower one holds


def _block_processes() -> None:
    """Process creation raises instead of happening. The sandbox's pids limit and runner.py's sweep of
    leftover processes still contain a program that gets around this (e.g. through ctypes)."""

    def blocked(*_args: Any, **_kw: Any) -> NoReturn:
        raise ProcessCreationBlocked("creating processes is not allowed in a test")

    import _posixsubprocess

    _posixsubprocess.fork_exec = blocked
    if "subprocess" in sys.modules:
        sys.modules["subprocess"]._fork_exec = blocked  # type: ignore[attr-defined]
    for name in dir(os):
        if name in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp") or \
                name.startswith(("exec", "spawn")):
            setattr(os, name, blocked)


# seccomp: (audit arch, banned syscalls, clone, clone3) per architecture.
_SYSCALLS = {
    "x86_64": (0xC000003E, (57, 58, 59, 322), 56, 435),  # fork, vfork, execve, execveat; clone; clone3
    "aarch64": (0xC00000B7, (221, 281), 220, 435),  # execve, execveat; clone; clone3
}
_CLONE_THREAD = 0x00010000


def _seccomp_no_processes() -> bool:
    """Kernel-level ban on new processes and exec (threads stay allowed), whatever the uid: the pids
    rlimit does nothing for root, and ctypes gets around Python-level guards. A banned call ends the
    process with SIGSYS, which runner.py reports as `process_limit`. False where the architecture
    is unknown or seccomp is unavailable; the Python guards and runner.py's sweep remain."""
    import ctypes

    spec = _SYSCALLS.get(os.uname().machine)
    if spec is None:
        return False
    arch, refused, clone, clone3 = spec
    trap, enosys, allow = 0x00030000, 0x00050000 | errno.ENOSYS, 0x7FFF0000
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    prog: list[tuple[int, int, int, int]] = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, trap), (ld, 0, 0, 0)]
    for nr in refused:
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, trap)]
    prog += [(jeq, 0, 1, clone3), (ret, 0, 0, enosys),  # glibc then falls back to clone, checked below
             (jeq, 0, 3, clone), (ld, 0, 0, 16), (jset, 1, 0, _CLONE_THREAD), (ret, 0, 0, trap),
             (ret, 0, 0, allow)]

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(prog))(*[Filter(*ins) for ins in prog])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return False
    fprog = Program(len(prog), filters)
    return bool(libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


def _plain(value: Any, depth: int = 0) -> bool:
    if type(value) not in PLAIN or depth > 50:
        return False
    if isinstance(value, dict):
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return all(_plain(v, depth + 1) for v in value)
    return True


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    def candidate(*args: Any, **kw: Any) -> Any:
        value = fn(*args, **kw)
        if not _plain(value):
            raise TypeError(f"the function returned a {type(value).__name__}, not plain data")
        return value

    return candidate


class ResultWriter:
    def __init__(self, path: str) -> None:
        self._f = open(path, "wb")  # noqa: SIM115 - opened before the program runs, kept open

    def __call__(self, status: str, detail: str = "", value: str | None = None) -> NoReturn:
        try:
            sys.stdout.flush()
        except OSError as e:
            if e.errno == errno.EFBIG:
                status, detail = "output_limit", "the program printed more than the output limit"
        self._f.write(marshal.dumps({"status": status, "detail": detail[-2000:], "value": value}))
        self._f.close()
        os._exit(0)


def _where(exc: BaseException) -> str:
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    return frames[-1].filename if frames else ""


def _describe(exc: BaseException) -> str:
    import traceback

    lines = traceback.format_exception(exc)
    # Drop this file's frames: the user wants their own program's lines.
    kept = [ln for ln in lines if __file__ not in ln]
    return "".join(kept[-8:])


def main() -> None:
    payload_path, result_path = sys.argv[1], sys.argv[2]
    with open(payload_path, "rb") as f:
        payload = marshal.load(f)
    os.unlink(payload_path)
    report = ResultWriter(result_path)
    sys.argv = ["solution.py"]
    _limit(payload["memory_mb"], payload["cpu_s"], payload["file_bytes"])
    _block_processes()
    _seccomp_no_processes()
    pristine = dict(vars(builtins))
    kind = payload["kind"]
    try:
        program = compile(payload["program"], "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        report("syntax_error", f"{type(e).__name__}: {e}")
    ns: dict[str, Any] = {"__name__": "__main__" if kind == "stdio" else "solution", "__builtins__": builtins}
    try:
        exec(program, ns)
        if kind == "call":
            value = eval(compile(payload["call"], "test.py", "eval"), ns)
            if not _plain(value):
                report("wrong_answer", f"returned a {type(value).__name__}, not plain data")
            report("ok", value=repr(value))
        if kind == "code":
            test_ns = dict(ns, __builtins__=pristine, __name__="test")
            entry = payload.get("entry_point")
            if entry and callable(ns.get(entry)):
                test_ns[entry] = _guarded(ns[entry])
            exec(compile(payload["code"], "test.py", "exec"), test_ns)
        report("ok")
    except SystemExit as e:
        if kind == "stdio" and e.code in (None, 0):
            report("ok")  # exit() ends many stdin/stdout programs; their output is still compared
        report("runtime_error", f"the program exited (code {e.code!r}) before the test finished")
    except MemoryError:
        report("memory_limit", f"ran out of memory (limit {payload['memory_mb']} MB)")
    except ProcessCreationBlocked as e:
        report("process_limit", str(e))
    except AssertionError as e:
        status = "wrong_answer" if _where(e) == "test.py" else "runtime_error"
        report(status, _describe(e))
    except OSError as e:
        if e.errno == errno.EFBIG:
            report("output_limit", "the program wrote more than the output limit")
        report("runtime_error", _describe(e))
    except BaseException as e:
        report("runtime_error", _describe(e))


if __name__ == "__main__":
    main()
