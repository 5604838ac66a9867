"""Agent prompts as plain text files; `$name` placeholders are filled with string.Template."""

from __future__ import annotations

from pathlib import Path
from string import Template

HERE = Path(__file__).parent


def load_prompt(name: str, **values: object) -> str:
    """The prompt file `<name>.txt` with its placeholders filled (a missing value is a KeyError: a bug)."""
    return Template((HERE / f"{name}.txt").read_text(encoding="utf-8")).substitute(
        {k: str(v) for k, v in values.items()})
