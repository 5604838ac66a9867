"""Reading the program out of a completion: the fenced ```python block (evolvable).

The last block that defines the entry point wins, else the last block; an unterminated final
block counts (a truncated answer still gets judged). The task's prelude goes first.
"""

from __future__ import annotations

import re

from harness.code.spec import TaskSpec

FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
PYTHON_TAGS = ("", "python", "py", "python3")


def code_blocks(completion: str) -> list[str]:
    return [body for tag, body in FENCE.findall(completion) if tag.lower() in PYTHON_TAGS and body.strip()]


def defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", code, re.M) is not None


def extract_program(completion: str, spec: TaskSpec) -> str | None:
    blocks = code_blocks(completion)
    if not blocks:
        return None
    code = blocks[-1]
    if spec.entry_point:
        defining = [b for b in blocks if defines(b, spec.entry_point)]
        code = defining[-1] if defining else code
    return f"{spec.prelude}\n{code}" if spec.prelude else code
