"""Files that cross the boundary to meta-agent. PROTECTED: agents may not edit this file.

meta-agent validates every file written here against its contract; keep the keys
exactly as they are. Writes are atomic (temp file, then rename) so a crash never
leaves a partial file that looks complete.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

SCHEMA_VERSION = 1


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf; the contract rejects them, so turn them into None here."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


MAX_LINE_BYTES = 1_000_000
"""meta-agent refuses a record line over 2,000,000 bytes (its contract), and with it the whole run's output.
A record over this bound has its longest strings cut (a SWE episode's diff once held a whole virtualenv
the policy had made: 15.6 MB), saying so in the text; what was scored is unchanged."""
CUT_MARK = "\n[... {n} characters cut: a record must stay under {limit} bytes]"


def dumps(record: dict[str, Any]) -> str:
    clean = _clean(record)
    line = json.dumps(clean, ensure_ascii=False, sort_keys=True)
    while len(line.encode("utf-8")) > MAX_LINE_BYTES:
        where = _longest(clean)
        if where is None:
            break  # nothing left to cut: meta-agent's check names the record
        holder, key = where
        text: str = holder[key]
        excess = len(line.encode("utf-8")) - MAX_LINE_BYTES
        size = len(json.dumps(text, ensure_ascii=False).encode("utf-8"))  # its bytes in the line, escapes included
        keep = max(0, int((size - excess - 200) * len(text) / size))  # at its mean bytes a character; else again
        holder[key] = text[:keep] + CUT_MARK.format(n=len(text) - keep, limit=MAX_LINE_BYTES)
        line = json.dumps(clean, ensure_ascii=False, sort_keys=True)
    return line


def _longest(value: Any) -> tuple[Any, Any] | None:
    """(container, key) of the longest string in a record that is worth cutting (over 1,000 characters)."""
    best: tuple[Any, Any] | None = None
    size = 1000
    stack = [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, item in items:
            if isinstance(item, str) and len(item) > size:
                best, size = (node, key), len(item)
            elif isinstance(item, dict | list):
                stack.append(item)
    return best


def read_tasks(path: Path) -> list[dict[str, Any]]:
    """Training tasks; each gets `tasks_dir`, where its files (e.g. SWE repository archives) live."""
    return [{**t, "tasks_dir": str(path.parent.resolve())} for t in read_jsonl(path)]


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Write all records atomically; returns how many were written."""
    tmp = path.with_name(path.name + ".partial")
    n = 0
    with tmp.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(dumps(r) + "\n")
            n += 1
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    return n


def write_json(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(_clean(obj), indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


class JsonlAppender:
    """Streams records to `<name>.partial` during a long run; `commit()` renames it into place."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tmp = path.with_name(path.name + ".partial")
        self._f: TextIO = self.tmp.open("w", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._f.write(dumps(record) + "\n")

    def flush(self) -> None:
        self._f.flush()

    def commit(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        self.tmp.replace(self.path)


def rollout_record(
    *,
    rollout_id: str,
    step: int,
    task_id: str,
    group_id: str,
    prompt: str,
    completion: str,
    rewards: dict[str, float],
    reward: float,
    advantage: float,
    weight: float,
    prompt_tokens: int,
    completion_tokens: int,
    truncated: bool,
    labels: list[str],
    harness_commit: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One completion (or one multi-turn episode) as meta-agent's contract expects it."""
    return {
        "schema_version": SCHEMA_VERSION,
        "rollout_id": rollout_id,
        "step": step,
        "task_id": task_id,
        "group_id": group_id,
        "prompt": prompt,
        "completion": completion,
        "rewards": rewards,
        "reward": reward,
        "advantage": advantage,
        "weight": weight,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "truncated": truncated,
        "labels": labels,
        "harness_commit": harness_commit,
        "verified": None,
        "extra": extra or {},
    }


def harness_commit() -> str:
    """The commit this checkout was exported from (meta-agent sets it; 'unknown' outside a run)."""
    return os.environ.get("HARNESS_COMMIT", "unknown")
