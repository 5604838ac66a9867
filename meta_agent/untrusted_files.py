"""Reading what sandboxed code wrote: data, never paths to follow.

A harness (or a policy's program, or an agent) controls every name in a directory it may write.
It could leave a symlink to a host file where meta-agent expects `rollouts.jsonl` (the trusted side
would read the host file and hand it back), a FIFO that blocks the reader forever, a hard link to
a file outside, or a `checkpoint` link to a model it never trained. So:

- `read_bytes` opens one file without following a final link and without blocking, and accepts
  only a regular file of bounded size; `read_lines` does the same for a file read line by line, so
  the trusted process never holds more than one line of it (JSON Lines outputs: `contract.read_jsonl`);
- `audit_tree` walks a directory after the sandboxed command ended (nothing of it runs any more,
  so nothing can swap entries behind the check) and rejects links, special files, hard links and
  names that would shadow meta-agent's own packages for a `python -m` started there.

Either raises `ContractError` naming the offending path, which fails the candidate, not the run.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from meta_agent.errors import ContractError

MAX_FILE_BYTES = 256 * 1024**2
"""Upper bound for one file read whole into memory: a bigger one is refused before anything of it is read."""
MAX_ENTRIES = 200_000
"""A tree with more entries than this is refused rather than walked for minutes."""
TRUSTED_PACKAGES = ("meta_agent", "sandboxes")


def _open_regular(path: Path, limit: int) -> int:
    """A descriptor of `path`, which must be a regular file (not a link, FIFO or device) of at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ContractError(f"{path}: missing") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ContractError(f"{path}: is a symbolic link; harness outputs must be regular files") from None
        raise ContractError(f"{path}: cannot be opened ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ContractError(f"{path}: is not a regular file (a FIFO, socket or device); "
                                "harness outputs must be regular files")
        if info.st_size > limit:
            raise ContractError(f"{path}: {info.st_size} bytes, over the {limit}-byte limit for this file; "
                                "the harness must write less")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The content of `path`, which must be a regular file (not a link, FIFO or device) of at most `limit`."""
    fd = _open_regular(path, limit)
    try:
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise ContractError(f"{path}: grew past the {limit}-byte limit while being read")
        return data
    finally:
        os.close(fd)


def read_lines(path: Path, *, max_bytes: int, max_line_bytes: int) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its newline) of a regular file, streamed: ContractError naming the file and
    the limit as soon as it holds more than `max_bytes` or a line is longer than `max_line_bytes`."""
    fd = _open_regular(path, max_bytes)
    with os.fdopen(fd, "rb", buffering=1 << 20) as f:
        total = 0
        lineno = 0
        while line := f.readline(max_line_bytes + 2):  # the line, its newline, and one byte to see it is too long
            lineno += 1
            total += len(line)
            if total > max_bytes:
                raise ContractError(f"{path}: grew past the {max_bytes}-byte limit while being read")
            body = line[:-1] if line.endswith(b"\n") else line
            if len(body) > max_line_bytes:
                raise ContractError(f"{path}:{lineno}: record is longer than {max_line_bytes} bytes, the limit for "
                                    "one line; the harness must write shorter records")
            yield lineno, body


def is_regular_file(path: Path) -> bool:
    """True for a regular file that is not a link (what `Path.is_file` says after following links)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def tree_problems(root: Path, limit: int = 5) -> list[str]:
    """Why `root` is not plain data: links, special files, hard links, shadowing names (first `limit`)."""
    problems: list[str] = []
    seen = 0
    if stat.S_ISLNK(os.lstat(root).st_mode):
        return [f"{root}: is a symbolic link"]
    for entry in os.scandir(root):
        if entry.name in TRUSTED_PACKAGES or entry.name in {f"{p}.py" for p in TRUSTED_PACKAGES}:
            problems.append(f"{entry.path}: shadows meta-agent's own package `{Path(entry.name).stem}` "
                            "for a `python -m meta_agent` started in this directory")
    stack = [root]
    while stack and len(problems) < limit:
        for entry in os.scandir(stack.pop()):
            seen += 1
            if seen > MAX_ENTRIES:
                return [*problems, f"{root}: more than {MAX_ENTRIES} entries"]
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                problems.append(f"{entry.path}: is a symbolic link (to {os.readlink(entry.path)!r})")
            elif stat.S_ISDIR(info.st_mode):
                stack.append(Path(entry.path))
            elif not stat.S_ISREG(info.st_mode):
                problems.append(f"{entry.path}: is not a regular file (a FIFO, socket or device)")
            elif info.st_nlink > 1:
                problems.append(f"{entry.path}: is hard-linked ({info.st_nlink} links)")
    return problems[:limit]


def audit_tree(root: Path) -> None:
    """ContractError unless everything under `root` is plain data (regular files and directories). What is not
    is removed first: a refused output stays on disk for the user to read, and must not be a trap there."""
    problems = tree_problems(root)
    if problems:
        scrub_tree(root)
        raise ContractError("unsafe entries in sandbox output (removed): " + "; ".join(problems))


def scrub_tree(root: Path) -> int:
    """Remove from `root` what a sandbox left that is not plain data: links, FIFOs, sockets, devices, extra names
    of hard-linked files, and top-level entries that shadow meta-agent's packages. Never follows a link; a tree
    too big to walk is removed whole. Returns the number of entries removed."""
    if stat.S_ISLNK(os.lstat(root).st_mode):
        root.unlink()
        return 1
    removed = 0
    for entry in os.scandir(root):
        if entry.name in TRUSTED_PACKAGES or entry.name in {f"{p}.py" for p in TRUSTED_PACKAGES}:
            _remove(Path(entry.path))
            removed += 1
    stack, seen = [root], 0
    while stack:
        for entry in os.scandir(stack.pop()):
            seen += 1
            if seen > MAX_ENTRIES:
                _remove(root)
                return removed + 1
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                stack.append(Path(entry.path))
            elif not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
                os.unlink(entry.path)
                removed += 1
    return removed


def _remove(path: Path) -> None:
    """Delete `path` without following links (shutil.rmtree unlinks a link inside, never its target)."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
