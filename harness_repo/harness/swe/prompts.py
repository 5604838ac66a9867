"""How an SWE task becomes the policy's first prompt."""

from __future__ import annotations

from typing import Any

SYSTEM = (
    "You are a software engineer fixing a bug in a Python repository. Each reply contains exactly one "
    "shell command in a ```bash block; you will see its output. Explore, edit files (e.g. with sed or "
    "python), run the tests, and when the fix is done reply with ```bash\nsubmit\n```."
)
STATEMENT_CHARS = 1500


def build_messages(task: dict[str, Any]) -> list[dict[str, str]]:
    statement = task["prompt"]
    if len(statement) > STATEMENT_CHARS:
        statement = statement[:STATEMENT_CHARS] + "\n[... cut ...]"
    user = f"Task id: {task['id']}\n\n{statement}\n\nThe repository is your current directory."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def task_id_of(messages: list[dict[str, str]]) -> str:
    """The task a prompt was built for (rollout functions receive prompts, not dataset rows)."""
    first = messages[-1]["content"].split("\n", 1)[0]
    if not first.startswith("Task id: "):
        raise ValueError("prompt does not start with 'Task id: ' (built by another prompt template?)")
    return first[len("Task id: "):].strip()
