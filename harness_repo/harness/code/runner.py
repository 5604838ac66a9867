"""Runs one program against many tests in THIS process: `python -I runner.py < job.json` (evolvable).

Started by harness/code/execution.py once per completion; standard library only (it runs as a
script). Before any program code runs it caps its own memory, file size and (where the kernel
honours it) process count, and makes process creation raise. Each test gets a fresh namespace, its
own stdin/stdout (file descriptors 0 and 1 are redirected, so `open(0)` and `os.write(1, ...)`
work), and a wall-clock alarm. One JSON line per test goes to the original stdout as it finishes,
so if a program takes the whole runner down, the caller still knows which test did it.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import io
import json
import math
import os
import resource
import signal
import sys
import tempfile
from typing import Any, NoReturn


class TestTimeout(BaseException):
    """Raised by the alarm; a BaseException so a program's `except Exception` cannot swallow it."""


class ProcessCreationBlocked(PermissionError):
    pass


def _user_processes() -> int:
    uid, n = os.getuid(), 0
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                n += 1
        except OSError:
            continue
    return n


def _limits(job: dict[str, Any]) -> None:
    # RLIMIT_NPROC counts every process of the uid (and root ignores it): allow what runs now plus a
    # few threads, so a fork bomb stops where the kernel honours it.
    wanted = [(resource.RLIMIT_AS, job["memory_mb"] * 2**20), (resource.RLIMIT_FSIZE, job["output_bytes"]),
              (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, _user_processes() + 16)]
    for which, value in wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))


def _block_processes() -> None:
    def blocked(*_a: Any, **_k: Any) -> NoReturn:
        raise ProcessCreationBlocked("creating processes is not allowed in a test")

    import _posixsubprocess

    _posixsubprocess.fork_exec = blocked
    for name in dir(os):
        if name in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp") or \
                name.startswith(("exec", "spawn")):
            setattr(os, name, blocked)


def same(got: Any, want: Any) -> bool:
    """Python's ==, with a relative tolerance of 1e-6 for floats at any depth."""
    if isinstance(got, float) or isinstance(want, float):
        ok = isinstance(got, int | float) and isinstance(want, int | float)
        return ok and (math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9) or (math.isnan(got) and math.isnan(want)))
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return type(got) is type(want) and len(got) == len(want) and all(map(same, got, want))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    try:
        return bool(got == want)
    except Exception:
        return False


def same_stdout(got: str, want: str) -> bool:
    if [ln.rstrip() for ln in got.rstrip().splitlines()] == [ln.rstrip() for ln in want.rstrip().splitlines()]:
        return True
    a, b = got.split(), want.split()
    if len(a) != len(b):
        return False
    try:
        return all(x == y or math.isclose(float(x), float(y), rel_tol=1e-6) for x, y in zip(a, b, strict=True))
    except ValueError:
        return False


def _alarm(_sig: int, _frame: Any) -> None:
    raise TestTimeout


def _json_norm(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return value


def _reopen_std_fds() -> None:
    """A program may have closed fd 0 or 1 (`open(0)` closes it when collected); reopen them so the
    next test's temp files do not land on 0 or 1."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)


def run_test(code: Any, test: dict[str, Any], timeout: float) -> tuple[str, str]:
    kind = "stdio" if "stdin" in test else "call" if "call" in test else "code"
    gc.collect()  # finalise the previous test's objects (open files on fd 0/1) before redirecting
    _reopen_std_fds()
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
        fin.write((test.get("stdin") or "").encode())
        fin.seek(0)
        os.dup2(fin.fileno(), 0)
        os.dup2(fout.fileno(), 1)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        ns: dict[str, Any] = {"__name__": "__main__" if kind == "stdio" else "solution"}
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            exec(code, ns)
            value = eval(test["call"], ns) if kind == "call" else None
            if kind == "code":
                exec(test["code"], ns)
        except TestTimeout:
            return "timeout", f"still running after {timeout:g}s"
        except SystemExit as e:
            if kind != "stdio" or e.code not in (None, 0):
                return "runtime_error", f"the program exited (code {e.code!r}) before the test finished"
        except MemoryError:
            return "memory_limit", "ran out of memory"
        except ProcessCreationBlocked as e:
            return "process_limit", str(e)
        except AssertionError as e:
            return ("wrong_answer" if kind == "code" else "runtime_error"), f"AssertionError: {e}"
        except BaseException as e:
            return "runtime_error", f"{type(e).__name__}: {e}"[:500]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            with contextlib.suppress(OSError):
                sys.stdout.flush()
        if kind == "call":
            want = ast.literal_eval(test["expected"])
            if test.get("json_compare"):
                value, want = _json_norm(value), _json_norm(want)
            ok = same(value, want)
            return ("passed", "") if ok else ("wrong_answer", f"{test['call']} returned {value!r:.200}")
        if kind == "stdio":
            fout.seek(0)
            got = fout.read().decode(errors="replace")
            return ("passed", "") if same_stdout(got, test["stdout"]) else ("wrong_answer", f"printed {got!r:.200}")
        return "passed", ""


def main() -> None:
    job = json.loads(sys.stdin.read())
    out = os.fdopen(os.dup(1), "w")
    _limits(job)
    _block_processes()
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(10_000)
    try:
        code = compile(job["program"], "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        for i in range(len(job["tests"])):
            out.write(json.dumps({"i": i, "verdict": "syntax_error", "detail": str(e)}) + "\n")
        return
    for i, test in enumerate(job["tests"]):
        verdict, detail = run_test(code, test, float(job["timeout_s"]))
        out.write(json.dumps({"i": i, "verdict": verdict, "detail": detail}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
