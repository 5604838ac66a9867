"""`meta-agent sandbox ...`: inspect and prepare sandbox backends."""

from __future__ import annotations

from enum import StrEnum

import typer

from meta_agent.commands.app import App

app = App(help="Inspect and prepare the sandboxes that run evolved harness code.")


class BuildMethod(StrEnum):
    auto = "auto"
    dockerfile = "dockerfile"
    debootstrap = "debootstrap"


@app.command()
def doctor() -> None:
    """Show which sandbox backends work here, which one `auto` picks, and what to install for the others."""
    from sandboxes.doctor import diagnose, render

    typer.echo(render(diagnose()))


@app.command("build-image")
def build_image(
    method: BuildMethod = typer.Option(
        BuildMethod.auto,
        help="dockerfile needs a reachable registry; debootstrap needs root and a Debian mirror; "
        "auto tries the registry first.",
    ),
    force: bool = typer.Option(False, help="Rebuild even if the image for the current definitions exists."),
) -> None:
    """Build the docker backend's image from sandboxes/images/ (skipped when its content hash is built)."""
    from sandboxes.base import SandboxError
    from sandboxes.engine import docker_client
    from sandboxes.image import build_image as build

    try:
        tag = build(docker_client(), method=method.value, force=force, log=typer.echo)
    except SandboxError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err
    typer.echo(tag)
