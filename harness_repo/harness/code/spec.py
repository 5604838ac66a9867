"""What the harness knows about a code task: io mode, entry point, prelude and the VISIBLE tests.

meta-agent writes them into Task.metadata (hidden tests never reach the harness). A task that
carries them as a JSON object in `answer` instead (tools that keep only id/prompt/answer) works too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskSpec:
    io: str
    """"stdio" (read stdin, print) or "call" (a function is called)."""
    entry_point: str | None
    prelude: str
    """Imports every program gets (e.g. `from typing import List`)."""
    tests: tuple[dict[str, Any], ...]
    """{stdin, stdout} | {call, expected[, json_compare]} | {code}."""

    def key(self) -> str:
        return json.dumps([self.io, self.entry_point, self.prelude, self.tests], sort_keys=True)


def task_spec(task: dict[str, Any]) -> TaskSpec:
    meta = task.get("metadata") or {}
    if "tests" not in meta and str(task.get("answer", "")).lstrip().startswith("{"):
        try:
            meta = json.loads(task["answer"])
        except ValueError:
            meta = {}
    return TaskSpec(io=meta.get("io", "call"), entry_point=meta.get("entry_point"), prelude=meta.get("prelude") or "",
                    tests=tuple(meta.get("tests") or ()))
