"""How a code task becomes the policy's chat prompt (evolvable)."""

from __future__ import annotations

from typing import Any

from harness.code.spec import task_spec

SYSTEM = ("You are an expert Python programmer. Solve the task and answer with the complete solution in a "
          "single ```python code block.")
STDIO = "Read the input from standard input and print the answer to standard output."
CALL = "Write the function `{entry}`; it is called directly, so do not read input or print the result."


def build_messages(task: dict[str, Any]) -> list[dict[str, str]]:
    spec = task_spec(task)
    instruction = CALL.format(entry=spec.entry_point) if spec.io == "call" else STDIO
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{task['prompt']}\n\n{instruction}"},
    ]
