"""`meta-agent sandbox ...`: inspect and prepare sandbox backends."""

import typer

app = typer.Typer(help="Inspect and prepare the sandboxes that run evolved harness code.", no_args_is_help=True)
