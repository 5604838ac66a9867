"""The CLI's Typer app: every command's errors take one path.

A `UserError` (bad input, a state the user can fix), a `SandboxError` or an unknown registered
name becomes one red line on stderr and exit code 1; Ctrl-C exits 130. Anything else is a bug and
keeps its traceback: it is never dressed as a user error.
"""

from __future__ import annotations

import functools
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


class App(typer.Typer):
    """A Typer app whose commands all report user errors the same way."""

    def __init__(self, *, interrupted: str = "interrupted", **kwargs: Any) -> None:
        """`interrupted`: what Ctrl-C prints (say how to continue, where the command can)."""
        self.interrupted = interrupted
        kwargs.setdefault("no_args_is_help", True)
        kwargs.setdefault("pretty_exceptions_enable", False)
        kwargs.setdefault("rich_markup_mode", "rich")
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(*args, **kwargs)

        def decorator(fn: F) -> F:
            register(one_line_errors(fn, self.interrupted))
            return fn

        return decorator
