"""How a math task becomes the policy's chat prompt."""

from __future__ import annotations

from typing import Any

SYSTEM = "You are a careful calculator. Solve the problem and finish with a line 'Answer: <number>'."


def build_messages(task: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": task["prompt"]},
    ]
