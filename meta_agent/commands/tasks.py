"""`meta-agent tasks ...`: build, import and inspect repository-level bug-fix tasks (SWE-bench format)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Build, import and inspect repository-level bug-fix tasks (SWE-bench format).",
                  no_args_is_help=True)
console = Console()
F = TypeVar("F", bound=Callable[..., Any])


def _user_errors(fn: F) -> F:
    """Errors a user can act on become one red line and exit code 1."""
    from meta_agent.swe.errors import SweTaskError
    from sandboxes import SandboxError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (SweTaskError, SandboxError, KeyError) as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            console.print(f"[bold red]error:[/] {msg}", highlight=False)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            console.print("[yellow]interrupted; run the same command again to continue where it stopped[/]")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _split_table(title: str, rows: dict[str, Counter[str]]) -> Table:
    table = Table("project", "train", "selection", "test", "total", title=title)
    for project in sorted(rows):
        c = rows[project]
        table.add_row(project, str(c["train"]), str(c["selection"]), str(c["test"]), str(sum(c.values())))
    return table


@app.command()
@_user_errors
def build(
    from_pypi: Annotated[list[str], typer.Option("--from-pypi", help="NAME==VERSION of a PyPI sdist; repeatable")]
    = [],  # noqa: B006 - typer needs a literal default
    from_git: Annotated[list[Path], typer.Option("--from-git", help="a local git repo (its HEAD); repeatable")]
    = [],  # noqa: B006
    default: Annotated[bool, typer.Option("--default", help="build the default task set into the cache")] = False,
    out: Annotated[Path, typer.Option(help="SWE-bench JSONL to write (not used with --default)")]
    = Path("swe-tasks.jsonl"),
    max_per_project: Annotated[int, typer.Option(min=1, help="instances kept per project")] = 50,
    seed: Annotated[int, typer.Option(help="mutant order and split assignment")] = 0,
    sandbox: Annotated[str, typer.Option(help="auto | docker | bwrap | process")] = "auto",
    workers: Annotated[int, typer.Option(min=1, help="mutants tested in parallel")] = 2,
    deps: Annotated[list[str], typer.Option("--deps", help="pip requirement the tests need; repeatable")]
    = [],  # noqa: B006
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Inject bugs into real projects and keep those that fail tests and are fixed by their gold patch.

    Resumable: results of every tested mutant are cached, so re-running continues a killed build.
    """
    from meta_agent.swe.build import build_tasks
    from meta_agent.swe.instance import write_instances
    from meta_agent.swe.sources import Source, parse_sources
    from meta_agent.swe.splits import with_splits
    from meta_agent.swe.taskset import build_default

    if default:
        if from_pypi or from_git:
            raise typer.BadParameter("--default builds the pinned default set; drop --from-pypi/--from-git")
        manifest = build_default(sandbox=sandbox, workers=workers, max_per_project=max_per_project, console=console,
                                 progress=progress)
        console.print(f"default task set: {manifest.counts} ({manifest.origin})")
        return
    sources: list[Source] = parse_sources(from_pypi, [str(p) for p in from_git])
    instances = with_splits(build_tasks(sources, sandbox=sandbox, max_per_project=max_per_project, seed=seed,
                                        workers=workers, deps=deps, console=console, progress=progress), seed=seed)
    write_instances(out, instances)
    rows: dict[str, Counter[str]] = {}
    for inst in instances:
        rows.setdefault(inst.project, Counter())[inst.split or "test"] += 1
    console.print(_split_table(f"{len(instances)} instances", rows))
    console.print(f"wrote {out}; to use it: [bold]meta-agent tasks import {out} --name NAME[/]")


@app.command(name="import")
@_user_errors
def import_(
    file: Annotated[Path, typer.Argument(help="SWE-bench / SWE-Gym / meta-agent JSONL")],
    name: Annotated[str | None, typer.Option(help="task set name [default: the file's stem]")] = None,
    split: Annotated[str, typer.Option(help="keep (the file's split field, else test) | auto | train | "
                                            "selection | test")] = "keep",
) -> None:
    """Validate a task file and copy it into the task cache as a named set."""
    from meta_agent.swe.instance import SPLITS
    from meta_agent.swe.taskset import import_tasks

    if split not in ("keep", "auto", *SPLITS):
        raise typer.BadParameter(f"--split must be keep, auto or one of {', '.join(SPLITS)}")
    manifest = import_tasks(file, name=name or file.stem, split=None if split == "keep" else split)  # type: ignore[arg-type]
    console.print(f"imported {sum(manifest.counts.values())} instances as task set [bold]{manifest.name}[/]: "
                  + ", ".join(f"{k} {v}" for k, v in manifest.counts.items()))


@app.command(name="list")
@_user_errors
def list_() -> None:
    """Instance counts per task set, project and split."""
    from meta_agent.swe.instance import SPLITS
    from meta_agent.swe.taskset import list_tasksets, load_tasks

    manifests = list_tasksets()
    if not manifests:
        console.print("no task sets yet: `meta-agent tasks build --default` or `meta-agent tasks import FILE`")
        return
    for manifest in manifests:
        rows: dict[str, Counter[str]] = {}
        for split in SPLITS:
            for inst in load_tasks(split, manifest.name):
                rows.setdefault(inst.project, Counter())[split] += 1
        console.print(_split_table(f"{manifest.name}: {manifest.origin}", rows))


@app.command()
@_user_errors
def show(
    instance_id: Annotated[str, typer.Argument(help="an instance id from `meta-agent tasks list` files")],
    patch: Annotated[bool, typer.Option("--patch", help="also print the gold patch")] = False,
) -> None:
    """Print one instance: problem statement, tests, environment (and the gold patch if asked)."""
    from meta_agent.swe.taskset import find_instance, repo_path

    inst = find_instance(instance_id)
    console.print(f"[bold]{inst.instance_id}[/]  split={inst.split}  repo={inst.repo}  base={inst.base_commit[:12]}",
                  highlight=False)
    console.print(f"repository: {repo_path(inst)}", highlight=False)
    setup = inst.test_setup()
    console.print(f"setup: python_path={setup.python_path} deps={setup.deps} timeout={setup.timeout_s}s",
                  highlight=False)
    console.print(f"FAIL_TO_PASS ({len(inst.FAIL_TO_PASS)}): " + ", ".join(inst.FAIL_TO_PASS[:10]), highlight=False)
    console.print(f"PASS_TO_PASS: {len(inst.PASS_TO_PASS)} tests\n", highlight=False)
    console.print(inst.problem_statement, highlight=False, markup=False)
    if patch:
        console.print("\n[bold]gold patch[/]")
        console.print(inst.patch, highlight=False, markup=False)
