"""The CLI's Typer app: every command's errors take one path.

A `UserError` (bad input, a state the user can fix), a `SandboxError` or an unknown registered
name becomes one red line on stderr and exit code 1; Ctrl-C exits 130. Anything else is a bug and
keeps its traceback: it is never dressed as a user error.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from meta_agent.errors import UserError
from sandboxes.base import SandboxError
from sandboxes.registry import UnknownName

F = TypeVar("F", bound=Callable[..., Any])
USER_ERRORS = (UserError, SandboxError, UnknownName)
errors = Console(stderr=True, highlight=False)


def one_line_errors(fn: F, interrupted: str = "interrupted") -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as e:
            errors.print(f"[bold red]error:[/] {e}")
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            errors.print(f"[yellow]{interrupted}[/]")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def unwrap(doc: str) -> str:
    """A docstring as help text: each paragraph's source line breaks become spaces (the terminal wraps it
    to its own width), while blank lines, list items and indented lines keep their breaks."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(doc)):
        lines: list[str] = []
        for line in block.splitlines():
            keep = not lines or line.startswith((" ", "- ", "* ", "| ")) or re.match(r"\d+\. ", line)
            if keep:
                lines.append(line)
            else:
                lines[-1] += " " + line.strip()
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def option_groups(panels: dict[str, list[str]]) -> Callable[[F], F]:
    """Show a command's options under headings in --help (typer's `rich_help_panel`), named here once
    rather than in every option. Every parameter must be placed, so a new option cannot go unlisted."""

    def apply(fn: F) -> F:
        hints = typing.get_type_hints(fn, include_extras=True)
        placed = {name: panel for panel, names in panels.items() for name in names}
        missing = set(inspect.signature(fn).parameters) - set(placed)
        if missing:
            raise TypeError(f"{fn.__name__}: options without a --help heading: {sorted(missing)}")
        for name, panel in placed.items():
            info = next(m for m in typing.get_args(hints[name])[1:] if isinstance(m, typer.models.ParameterInfo))
            info.rich_help_panel = panel
        fn.__annotations__.update(hints)  # evaluated once: typer reads these objects, not fresh copies
        return fn

    return apply


class App(typer.Typer):
    """A Typer app whose commands all report user errors the same way."""

    def __init__(self, *, interrupted: str = "interrupted", **kwargs: Any) -> None:
        """`interrupted`: what Ctrl-C prints (say how to continue, where the command can)."""
        self.interrupted = interrupted
        kwargs.setdefault("no_args_is_help", True)
        kwargs.setdefault("pretty_exceptions_enable", False)
        kwargs.setdefault("rich_markup_mode", "rich")
        if kwargs.get("help"):
            kwargs["help"] = unwrap(kwargs["help"])
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        def decorator(fn: F) -> F:
            help_text = kwargs.get("help") or fn.__doc__
            given = {**kwargs, **({"help": unwrap(help_text)} if help_text else {})}
            super(App, self).command(*args, **given)(one_line_errors(fn, self.interrupted))
            return fn

        return decorator
