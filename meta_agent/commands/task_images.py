"""`meta-agent tasks images ...`: the container images that image-based SWE instances run in."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from meta_agent.commands.app import App

app = App(help="Build, list and prune the container images that SWE-bench-family instances run in.",
          interrupted="interrupted; run the same command again: images already made are kept")
console = Console()


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


@app.command()
def build(
    taskset: Annotated[str, typer.Option(help="task set whose images to make (`meta-agent tasks list`)")],
    network: Annotated[bool, typer.Option("--network", help="let Dockerfile steps reach the network (package "
                                                            "installs); off by default")] = False,
    force: Annotated[bool, typer.Option("--force", help="make every image again, even those on the engine")]
    = False,
) -> None:
    """Make every image the task set's instances run in and the engine lacks: from an instance's `dockerfile`
    (FROM ${META_AGENT_BASE}, meta-agent's Debian base image), a Harbor task's environment/ directory, or by
    pulling its name. Images already there
    are reused, so this is cheap to run again."""
    from meta_agent.swe.task_images import build_images, image_needs, taskset_instances
    from sandboxes.engine import docker_client

    needs = image_needs(taskset_instances(taskset))
    if not needs:
        console.print(f"task set {taskset} has no instance with its own image: nothing to build")
        return
    client = docker_client()
    try:
        states = build_images(client, needs, network=network, force=force,
                              log=lambda line: console.print(line, markup=False, highlight=False))
    finally:
        client.close()
    total = sum(s.size for s in states)
    console.print(f"{len(states)} images ready for {taskset}, {_size(total)} on the engine", highlight=False)


@app.command(name="list")
def list_(
    taskset: Annotated[str, typer.Option(help="task set whose images to list")],
) -> None:
    """Each image the task set needs: how many instances run in it, whether the engine has it, and its size."""
    from meta_agent.swe.task_images import image_needs, image_state, taskset_instances
    from sandboxes.engine import docker_client

    needs = image_needs(taskset_instances(taskset))
    client = docker_client()
    try:
        states = [image_state(client, n) for n in needs]
    finally:
        client.close()
    table = Table("image", "instances", "on engine", "size", "made by", title=f"images of {taskset}")
    for s in states:
        there = "stale" if s.stale else ("yes" if s.present else "[red]missing[/]")
        recipe = "dockerfile" if s.need.dockerfile else ("environment/" if s.need.context else "pull")
        how = f"meta-agent ({recipe})" if s.built_here else recipe
        table.add_row(s.need.name, str(len(s.need.instances)), there, _size(s.size) if s.present else "-", how)
    console.print(table)
    missing = [s for s in states if not s.present or s.stale]
    if missing:
        console.print(f"{len(missing)} to make: `meta-agent tasks images build --taskset {taskset}`",
                      highlight=False, markup=False)


@app.command()
def prune(
    all_: Annotated[bool, typer.Option("--all", help="remove every image meta-agent built, even those a task "
                                                     "set still needs")] = False,
) -> None:
    """Remove the images meta-agent built that no task set needs any more (images it pulled or you loaded
    are never removed)."""
    from meta_agent.swe.task_images import image_needs, prune_images, taskset_instances
    from meta_agent.swe.taskset import list_tasksets
    from sandboxes.engine import docker_client

    keep = {n.name for m in list_tasksets() for n in image_needs(taskset_instances(m.name))}
    client = docker_client()
    try:
        removed, freed = prune_images(client, keep, everything=all_,
                                      log=lambda line: console.print(line, markup=False, highlight=False))
    finally:
        client.close()
    console.print(f"removed {len(removed)} images, {_size(freed)} freed" + (": " + ", ".join(removed) if removed
                                                                             else ""), markup=False,
                  highlight=False)
