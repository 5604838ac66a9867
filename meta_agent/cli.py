"""The `meta-agent` command line (typer). Each command delegates to a module that does the work."""

from __future__ import annotations

import typer

from meta_agent.commands import sandbox

app = typer.Typer(
    help="meta-agent: RL training of LLM policies that evolves its own training harness.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(sandbox.app, name="sandbox")


def main() -> None:
    app()
