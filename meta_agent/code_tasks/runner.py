"""Runs a batch of programs' tests inside the sealed evaluator's sandbox: `python -E -s runner.py JOB OUT`.

Copied into the sandbox with child.py; standard library only. One runner call executes many
programs and tests (a sandbox round trip per test would cost more than the test). Each test runs
in a fresh interpreter (child.py) with its own timeout and rlimits, in a worker process that is a
child subreaper: whatever a test leaves behind (a fork bomb's children, a daemon) is re-parented
to the worker and killed before the next test starts, and reported as `process_limit`.

JOB (deleted as soon as it is read, before any program runs) holds `programs` (id, program, tests,
entry_point, capture, hash_seed), `timeout_s`, `memory_mb`, `output_bytes` and `workers`; OUT receives one
verdict list per program. A `capture` program's call tests return the value instead of judging it
(used to generate tests from a reference solution).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import functools
import json
import marshal
import math
import multiprocessing
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

CHILD = Path(__file__).resolve().with_name("child.py")
PR_SET_CHILD_SUBREAPER = 36
SPAWN_RETRY_S = 3.0
FLOAT_REL, FLOAT_ABS = 1e-6, 1e-9


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _children(of: int) -> list[int]:
    """Live (or zombie) children of process `of` (single-threaded), from /proc."""
    try:
        return [int(pid) for pid in Path(f"/proc/{of}/task/{of}/children").read_text().split()]
    except OSError:
        pass  # kernel without CONFIG_PROC_CHILDREN: scan every process's parent
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rfind(")") + 2 :].split()[1]) == of:
            out.append(int(entry))
    return out


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _sweep() -> int:
    """Kill and reap every process left re-parented to this worker (a subreaper); count them."""
    killed: set[int] = set()
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        left = _children(os.getpid())
        if not left:
            break
        for pid in left:
            killed.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
    return len(killed)


def _norm_json(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return value


def same_value(got: Any, want: Any) -> bool:
    """Python's `==` (as the test's author meant it), except that floats compare with a relative tolerance."""
    if isinstance(got, float) or isinstance(want, float):
        if not (isinstance(got, int | float) and isinstance(want, int | float)):
            return False
        both_nan = math.isnan(got) and math.isnan(want)
        return both_nan or math.isclose(got, want, rel_tol=FLOAT_REL, abs_tol=FLOAT_ABS)
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return type(got) is type(want) and len(got) == len(want) and all(
            same_value(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same_value(got[k], want[k]) for k in want)
    return bool(got == want)


def same_stdout(got: str, want: str) -> bool:
    """Line-wise equality ignoring trailing whitespace; else token-wise with a float tolerance."""
    lines = [ln.rstrip() for ln in got.rstrip().splitlines()]
    if lines == [ln.rstrip() for ln in want.rstrip().splitlines()]:
        return True
    a, b = got.split(), want.split()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        try:
            if not math.isclose(float(x), float(y), rel_tol=FLOAT_REL, abs_tol=FLOAT_ABS):
                return False
        except ValueError:
            return False
    return True


def _judge_value(raw: str | None, test: dict[str, Any]) -> tuple[str, str]:
    try:
        got = ast.literal_eval(raw or "")
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return "wrong_answer", f"returned {(raw or '')[:200]}, which is not a literal value"
    want = ast.literal_eval(test["expected"])
    if test.get("json_compare"):
        got, want = _norm_json(got), _norm_json(want)
    if same_value(got, want):
        return "passed", ""
    shown = raw[:200] if raw else repr(raw)
    return "wrong_answer", f"{test['call'][:200]} returned {shown}, expected {test['expected'][:200]}"


def _spawn(args: list[str], cwd: Path, stdin: Any, stdout: Any, stderr: Any, hash_seed: int
           ) -> subprocess.Popen[bytes]:
    """Start a test process; retry briefly while another test's processes hold the sandbox's pids limit.
    A fixed hash seed makes set/dict-of-str ordering, and so verdicts, the same on every run."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONHASHSEED": str(hash_seed)}
    deadline = time.monotonic() + SPAWN_RETRY_S
    while True:
        try:
            return subprocess.Popen(args, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr,
                                    start_new_session=True, env=env)
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """True when the process exits within `timeout`. A pidfd turns readable at exit, so this returns at
    once, where Popen.wait(timeout) sleep-polls and adds up to 50 ms to every test."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@functools.cache
def _scratch(base: str) -> Path:
    """This worker's directory for test files, reused (and emptied) test after test."""
    return Path(tempfile.mkdtemp(prefix="w-", dir=base))


def _empty(directory: Path) -> None:
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)


def run_test(program: dict[str, Any], test: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """One test in a fresh interpreter; returns {verdict, detail, seconds}."""
    kind = "stdio" if "stdin" in test else "call" if "call" in test else "code"
    started = time.monotonic()
    tmp = _scratch(job["scratch"])
    timeout = float(test.get("timeout_s") or job["timeout_s"])
    try:
        payload = {"program": program["program"], "kind": kind, "entry_point": program.get("entry_point"),
                   "call": test.get("call"), "code": test.get("code"), "memory_mb": job["memory_mb"],
                   "cpu_s": math.ceil(timeout) + 1, "file_bytes": job["output_bytes"]}
        (tmp / "payload").write_bytes(marshal.dumps(payload))
        (tmp / "stdin").write_text(test.get("stdin") or "")
        with (tmp / "stdin").open("rb") as fin, (tmp / "stdout").open("wb") as fout, \
                (tmp / "stderr").open("wb") as ferr:
            try:
                # -s -P: no user site, no script dir on sys.path; not -I, which would ignore the hash seed.
                proc = _spawn([sys.executable, "-s", "-P", str(CHILD), str(tmp / "payload"), str(tmp / "result")],
                              tmp, fin, fout, ferr, int(program.get("hash_seed", 0)))
            except BlockingIOError:
                return {"verdict": "process_limit", "seconds": 0.0,
                        "detail": "could not start the test: the sandbox's process limit is exhausted"}
            timed_out = not _wait(proc, timeout)
            _kill_group(proc.pid)
            proc.wait()
            leftovers = _sweep()
        seconds = time.monotonic() - started
        capture = bool(program.get("capture"))
        verdict, detail = _classify(proc.returncode, timed_out, leftovers, tmp, test, kind, timeout, capture)
        out: dict[str, Any] = {"verdict": verdict, "detail": detail, "seconds": round(seconds, 4)}
        if capture and verdict == "passed":
            out["value"] = marshal.loads((tmp / "result").read_bytes()).get("value")
        return out
    finally:
        _empty(tmp)


def _classify(code: int, timed_out: bool, leftovers: int, tmp: Path, test: dict[str, Any], kind: str,
              timeout: float, capture: bool) -> tuple[str, str]:
    if leftovers:
        return "process_limit", f"started {leftovers} processes that were still there when it ended; killed"
    if timed_out:
        return "timeout", f"still running after {timeout:g}s; killed"
    try:
        result = marshal.loads((tmp / "result").read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        result = None
    if result is None:
        err = (tmp / "stderr").read_bytes()[-1000:].decode(errors="replace")
        if code == -signal.SIGXCPU:
            return "timeout", f"used more than {timeout:g}s of CPU"
        if code == -signal.SIGSYS:
            return "process_limit", "tried to start a process or exec a program (refused by the seccomp filter)"
        if code == -signal.SIGKILL:
            return "memory_limit", f"killed (most likely by the sandbox memory limit); {err}".strip()
        if code < 0:
            return "runtime_error", f"crashed with {signal.Signals(-code).name}; {err}".strip()
        return "runtime_error", f"exited (code {code}) before the test finished; {err}".strip()
    status, detail = result["status"], result.get("detail", "")
    if status != "ok":
        return status, detail
    if kind == "call":
        return ("passed", "") if capture else _judge_value(result.get("value"), test)
    if kind == "stdio":
        got = (tmp / "stdout").read_bytes().decode(errors="replace")
        if same_stdout(got, test["stdout"]):
            return "passed", ""
        return "wrong_answer", f"printed {got[:200]!r}, expected {test['stdout'][:200]!r}"
    return "passed", ""


def _unit(args: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    program, test, job = args
    return run_test(program, test, job)


def main() -> None:
    job_path, out_path = Path(sys.argv[1]), Path(sys.argv[2])
    job = json.loads(job_path.read_text())
    job_path.unlink()
    scratch = tempfile.mkdtemp(prefix="code-tests-")
    settings = {k: v for k, v in job.items() if k != "programs"} | {"scratch": scratch}
    units = [(p, t, settings) for p in job["programs"] for t in p["tests"]]
    workers = max(1, min(int(job.get("workers", 1)), len(units) or 1))
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_become_subreaper) as pool:
            verdicts = list(pool.map(_unit, units, chunksize=1))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out: dict[str, list[dict[str, Any]]] = {p["id"]: [] for p in job["programs"]}
    for (program, _test, _job), verdict in zip(units, verdicts, strict=True):
        out[program["id"]].append(verdict)
    tmp = out_path.with_name(out_path.name + ".partial")
    tmp.write_text(json.dumps(out))
    tmp.replace(out_path)


if __name__ == "__main__":
    main()
