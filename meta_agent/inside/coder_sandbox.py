"""The coder's file operations, run *inside* the sandbox as `python -c <this source> OP JSON_ARGS`.

Standalone on purpose (standard library only, nothing from meta_agent): the sandbox sees the
interpreter but not this package. The working directory is the candidate's workspace; every path
must stay inside it. Prints exactly one JSON line: {"ok": bool, "text": str, "changed": [paths]}.
Edits are all-or-nothing, and a Python file is never left in a state that does not compile.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path.cwd().resolve()
EVIDENCE = Path(os.environ["CODER_EVIDENCE"]).resolve() if os.environ.get("CODER_EVIDENCE") else None
"""The generation's evidence folder (read-only mount): list, read and grep reach it as `evidence/...`."""
PROTECTED = frozenset(json.loads(os.environ.get("CODER_PROTECTED", "[]")))
"""Paths (relative to the checkout) no edit may reach, whatever name the edit uses for them."""
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class OpError(Exception):
    """A request the workspace cannot satisfy; the message tells the model what to do instead."""


def resolve(rel: str) -> Path:
    path = (ROOT / rel).resolve()
    if path != ROOT and ROOT not in path.parents:
        raise OpError(f"{rel} is outside the harness checkout; use paths relative to its root")
    return path


def resolve_read(rel: str) -> Path:
    """A path to read: `evidence/...` in the evidence folder, anything else in the checkout."""
    if EVIDENCE is not None and (rel == "evidence" or rel.startswith("evidence/")):
        path = (EVIDENCE / rel[len("evidence/"):]).resolve()
        if path != EVIDENCE and EVIDENCE not in path.parents:
            raise OpError(f"{rel} is outside the evidence folder")
        return path
    return resolve(rel)


def writable(rel: str) -> Path:
    """The file an edit of `rel` writes: inside the checkout, reached without a symbolic link, not protected."""
    path = resolve(rel)
    if path != Path(os.path.normpath(ROOT / rel)):
        raise OpError(f"{rel} goes through a symbolic link; edit the file itself, by its own path")
    if str(path.relative_to(ROOT)) in PROTECTED:
        raise OpError(f"{rel} is protected (meta-agent rejects any candidate that changes it); make the change "
                      "elsewhere")
    return path


def rel_of(path: Path) -> str:
    if EVIDENCE is not None and (path == EVIDENCE or EVIDENCE in path.parents):
        return "evidence/" + str(path.relative_to(EVIDENCE)) if path != EVIDENCE else "evidence"
    return str(path.relative_to(ROOT)) if path != ROOT else "."


def check_source(rel: str, text: str) -> None:
    if rel.endswith(".py"):
        try:
            compile(text, rel, "exec", dont_inherit=True)
        except SyntaxError as e:
            raise OpError(f"the edit would leave {rel} with a syntax error at line {e.lineno}: {e.msg}; "
                          f"nothing was written") from None


def op_list(path: str = ".", max_entries: int = 300) -> dict[str, Any]:
    base = resolve_read(path)
    if not base.is_dir():
        raise OpError(f"{path} is not a directory")
    rows = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            p = Path(dirpath) / name
            rows.append(f"{rel_of(p)}  ({p.stat().st_size} bytes)")
    more = f"\n[{len(rows) - max_entries} more entries]" if len(rows) > max_entries else ""
    return {"ok": True, "text": "\n".join(rows[:max_entries]) + more}


def op_read(path: str, start_line: int = 1, end_line: int | None = None) -> dict[str, Any]:
    p = resolve_read(path)
    if not p.is_file():
        raise OpError(f"{path} does not exist (list_files shows what does)")
    lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
    start = max(1, start_line)
    end = min(len(lines), end_line or len(lines))
    body = "\n".join(f"{i:5d}| {lines[i - 1]}" for i in range(start, end + 1))
    return {"ok": True, "text": f"{path} lines {start}-{end} of {len(lines)}\n{body}"}


def op_grep(pattern: str, path: str = ".", max_hits: int = 200) -> dict[str, Any]:
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise OpError(f"invalid regular expression {pattern!r}: {e}") from None
    base = resolve_read(path)
    files = [base] if base.is_file() else sorted(
        Path(d) / f for d, dn, fn in os.walk(base) for f in fn if not (set(Path(d).parts) & SKIP_DIRS))
    hits = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in enumerate(text.splitlines(), 1):
            if rx.search(line):
                hits.append(f"{rel_of(f)}:{no}: {line}")
    more = f"\n[{len(hits) - max_hits} more hits]" if len(hits) > max_hits else ""
    return {"ok": True, "text": "\n".join(hits[:max_hits]) + more if hits else f"no match for {pattern!r}"}


def write_all(new: dict[str, str | None]) -> list[str]:
    """Check and encode every new text first, then write (None deletes): all files change or none. Each file is
    replaced by rename, so no failure (an unencodable character, a full disk) leaves one cut short."""
    data: dict[str, bytes | None] = {}
    for rel, text in new.items():
        if text is None:
            data[rel] = None
            continue
        try:
            data[rel] = text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise OpError(f"{rel}: character {e.object[e.start:e.end]!r} at position {e.start} cannot be written as "
                          f"UTF-8; nothing was written") from None
        check_source(rel, text)
    targets = {rel: writable(rel) for rel in data}
    for rel, blob in data.items():
        p = targets[rel]
        if blob is None:
            p.unlink(missing_ok=True)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        partial = p.with_name(f".{p.name}.partial")
        partial.write_bytes(blob)
        if p.exists():
            os.chmod(partial, p.stat().st_mode & 0o777)
        os.replace(partial, p)
    return sorted(new)


def op_replace(path: str, search: str, replace: str) -> dict[str, Any]:
    p = resolve(path)
    if not p.is_file():
        raise OpError(f"{path} does not exist; create it with write_file")
    text = p.read_text(encoding="utf-8")
    count = text.count(search)
    if count != 1:
        hint = ("it does not occur; read the file again and copy the lines exactly, including indentation"
                if count == 0 else f"it occurs {count} times; include more surrounding lines to make it unique")
        raise OpError(f"search text must occur exactly once in {path}, but {hint}")
    changed = write_all({path: text.replace(search, replace, 1)})
    return {"ok": True, "text": f"replaced 1 occurrence in {path}", "changed": changed}


def op_write(path: str, content: str) -> dict[str, Any]:
    existed = resolve(path).is_file()
    changed = write_all({path: content})
    return {"ok": True, "text": f"{'overwrote' if existed else 'created'} {path} ({len(content)} characters)",
            "changed": changed}


def _diff_path(header: str) -> str | None:
    name = header.split("\t")[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_patch(diff: str) -> list[tuple[str | None, str | None, list[tuple[int, list[str]]]]]:
    """[(old path, new path, [(old start line, hunk lines)])]; hunk line counts in headers are not trusted."""
    lines = diff.splitlines()
    files: list[tuple[str | None, str | None, list[tuple[int, list[str]]]]] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _diff_path(lines[i][4:]), _diff_path(lines[i + 1][4:])
            i += 2
            hunks: list[tuple[int, list[str]]] = []
            while i < len(lines) and lines[i].startswith("@@"):
                m = HUNK.match(lines[i])
                if m is None:
                    raise OpError(f"malformed hunk header {lines[i]!r}; expected '@@ -START,COUNT +START,COUNT @@'")
                i += 1
                body: list[str] = []
                while i < len(lines) and not lines[i].startswith("@@"):
                    line = lines[i]
                    if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
                        break
                    if line.startswith("\\"):
                        i += 1
                        continue
                    if line == "":
                        line = " "
                    if line[0] not in " +-":
                        break
                    body.append(line)
                    i += 1
                hunks.append((int(m.group(1)), body))
            files.append((old, new, hunks))
        else:
            i += 1
    if not files:
        raise OpError("no file headers found; a unified diff needs '--- a/PATH' and '+++ b/PATH' lines, then hunks")
    return files


def _find(lines: list[str], block: list[str], near: int, after: int) -> int | None:
    n = len(block)
    for strip in (False, True):
        norm = (lambda s: s.rstrip()) if strip else (lambda s: s)
        want = [norm(b) for b in block]
        spots = [i for i in range(after, len(lines) - n + 1) if [norm(x) for x in lines[i:i + n]] == want]
        if spots:
            return min(spots, key=lambda i: abs(i - near))
    return None


def apply_hunks(path: str, text: str, hunks: list[tuple[int, list[str]]]) -> str:
    lines = text.splitlines()
    out_offset = 0
    cursor = 0
    for n, (start, body) in enumerate(hunks, 1):
        old = [b[1:] for b in body if b[0] in " -"]
        new = [b[1:] for b in body if b[0] in " +"]
        if not old:
            at = min(max(0, start - 1 + out_offset), len(lines)) if start else len(lines)
        else:
            found = _find(lines, old, start - 1 + out_offset, cursor)
            if found is None:
                raise OpError(f"hunk {n} of {path} (@@ -{start}) does not match the file: its context/removed lines "
                              f"were not found (first of them: {old[0]!r}); read the file again and send a "
                              f"fresh diff, or use replace_text")
            at = found
        lines[at:at + len(old)] = new
        cursor = at + len(new)
        out_offset += len(new) - len(old)
    return "\n".join(lines) + ("\n" if lines else "")


def op_patch(diff: str) -> dict[str, Any]:
    new: dict[str, str | None] = {}
    for old, target, hunks in parse_patch(diff):
        if old is None and target is None:
            raise OpError("a diff from /dev/null to /dev/null changes nothing")
        if target is None:
            new[str(old)] = None
            continue
        source = resolve(old) if old is not None else None
        if source is not None and not source.is_file():
            raise OpError(f"{old} does not exist; for a new file use '--- /dev/null'")
        text = source.read_text(encoding="utf-8") if source is not None else ""
        new[target] = apply_hunks(target, text, hunks)
        if old is not None and old != target:
            new[old] = None
    changed = write_all(new)
    return {"ok": True, "text": f"patch applied to {', '.join(changed)}", "changed": changed}


def op_replay_summary(replay: str, rollouts: str) -> dict[str, Any]:
    """What a replay says about this version's rewards: probes paid, verifier agreement, labels."""
    source = {r["rollout_id"]: r for r in map(json.loads, Path(rollouts).read_text().splitlines()) if r}
    out = [json.loads(line) for line in Path(replay).read_text().splitlines() if line.strip()]
    Path(replay).unlink(missing_ok=True)
    probe_ids = {i for i, r in source.items() if (r.get("extra") or {}).get("probe")}
    probes = [r for r in out if r["rollout_id"] in probe_ids]
    real = [r for r in out if r["rollout_id"] not in probe_ids]
    paid_probes = [r["rollout_id"] for r in probes if r["reward"] > 0]
    verdict = {i: r.get("verified") for i, r in source.items()}
    rejected_paid = [r["rollout_id"] for r in real if r["reward"] > 0 and verdict[r["rollout_id"]] is False]
    accepted_unpaid = [r["rollout_id"] for r in real if r["reward"] <= 0 and verdict[r["rollout_id"]]]
    changed = [r["rollout_id"] for r in real if abs(r["reward"] - source[r["rollout_id"]]["reward"]) > 1e-9]
    labels = Counter(lab for r in real for lab in r.get("labels", []))
    lines = [
        f"replayed {len(real)} training rollouts and {len(probes)} hacking probes with this version",
        f"hacking probes rewarded: {len(paid_probes)}/{len(probes)} {paid_probes[:4]}",
        f"verifier-rejected rollouts rewarded: {len(rejected_paid)} {rejected_paid[:4]}",
        f"verifier-accepted rollouts not rewarded: {len(accepted_unpaid)} {accepted_unpaid[:4]}",
        f"rollouts whose reward differs from training: {len(changed)} {changed[:4]}",
        f"labels: {dict(labels.most_common())}",
    ]
    return {"ok": True, "text": "\n".join(lines)}


def op_fingerprint() -> dict[str, Any]:
    """{path: size and mtime} of the workspace's files: what run_python changed shows as a difference."""
    prints = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            prints[str(p.relative_to(ROOT))] = f"{st.st_size}:{st.st_mtime_ns}"
    return {"ok": True, "text": json.dumps(prints, sort_keys=True)}


OPS: dict[str, Callable[..., dict[str, Any]]] = {
    "list": op_list, "read": op_read, "grep": op_grep, "replace": op_replace, "write": op_write, "patch": op_patch,
    "replay_summary": op_replay_summary, "fingerprint": op_fingerprint,
}


def main() -> None:
    op, args = sys.argv[1], json.loads(sys.argv[2])
    try:
        result = OPS[op](**args)
    except OpError as e:
        result = {"ok": False, "text": str(e)}
    except (OSError, UnicodeDecodeError, KeyError, ValueError) as e:
        result = {"ok": False, "text": f"{op} failed: {type(e).__name__}: {e}"}
    result.setdefault("changed", [])
    print(json.dumps(result))


if __name__ == "__main__":
    main()
