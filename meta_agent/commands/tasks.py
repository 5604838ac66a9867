"""`meta-agent tasks ...`: build, import and inspect repository-level bug-fix tasks (SWE-bench format)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from meta_agent.commands import task_images
from meta_agent.commands.app import App
from meta_agent.swe.defaults import DEFAULT_MAX_PER_PROJECT

app = App(help="Build, import and inspect repository-level bug-fix tasks (SWE-bench format).",
          interrupted="interrupted; run the same command again to continue where it stopped")
console = Console()
app.add_typer(task_images.app, name="images")


def _split_table(title: str, rows: dict[str, Counter[str]]) -> Table:
    table = Table("project", "train", "selection", "test", "total", title=title)
    for project in sorted(rows):
        c = rows[project]
        table.add_row(project, str(c["train"]), str(c["selection"]), str(c["test"]), str(sum(c.values())))
    return table


@app.command()
def build(
    from_pypi: Annotated[list[str], typer.Option("--from-pypi", help="NAME==VERSION of a PyPI sdist; repeatable")]
    = [],  # noqa: B006 - typer needs a literal default
    from_git: Annotated[list[Path], typer.Option("--from-git", help="a local git repo (its HEAD); repeatable")]
    = [],  # noqa: B006
    default: Annotated[bool, typer.Option("--default", help="install the default task set into the cache (the copy "
                                                             "shipped with meta-agent: under ~2 min)")] = False,
    from_source: Annotated[bool, typer.Option("--from-source", help="with --default: build it from the pinned "
                                                                    "projects instead (~30 min on 2 cores)")] = False,
    out: Annotated[Path, typer.Option(help="SWE-bench JSONL to write (not used with --default)")]
    = Path("swe-tasks.jsonl"),
    max_per_project: Annotated[int | None, typer.Option(
        min=1, help=f"instances kept per project (default {DEFAULT_MAX_PER_PROJECT}; --default always uses it)")]
    = None,
    seed: Annotated[int, typer.Option(help="mutant order and split assignment")] = 0,
    sandbox: Annotated[str, typer.Option(help="auto | docker | bwrap | process")] = "auto",
    workers: Annotated[int, typer.Option(min=1, help="mutants tested in parallel")] = 2,
    deps: Annotated[list[str], typer.Option("--deps", help="pip requirement the tests need; repeatable")]
    = [],  # noqa: B006
    pytest_arg: Annotated[list[str], typer.Option(
        "--pytest-arg", help="argument for every pytest run of these tasks, kept in each instance; repeatable, "
                             "e.g. --pytest-arg=--deselect=tests/test_x.py::test_slow")]
    = [],  # noqa: B006
    with_private: Annotated[bool, typer.Option("--with-private", help="keep the `mutation` field (it locates the "
                                                                      "bug) in --out")] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Inject bugs into real projects and keep those that fail tests and are fixed by their gold patch.

    Resumable: results of every tested mutant are cached, so re-running continues a killed build.
    """
    from meta_agent.swe.build import build_tasks
    from meta_agent.swe.instance import write_instances
    from meta_agent.swe.sources import Source, parse_sources
    from meta_agent.swe.splits import empty_split_warning, with_splits
    from meta_agent.swe.taskset import build_default

    if from_source and not default:
        raise typer.BadParameter("--from-source goes with --default (a build from --from-pypi/--from-git is always "
                                 "from source)")
    if default:
        if from_pypi or from_git or deps or pytest_arg or max_per_project is not None:
            raise typer.BadParameter("--default builds the pinned default set (projects, seed, "
                                     f"{DEFAULT_MAX_PER_PROJECT} per project); drop the other source and "
                                     "build options, or build your own set with --from-pypi/--from-git")
        manifest = build_default(sandbox=sandbox, workers=workers, console=console, progress=progress,
                                 from_source=from_source)
        how = "built" if from_source else "installed"
        console.print(f"default task set {how}: {manifest.counts} ({manifest.origin})")
        console.print(f"manifest hash: [bold]{manifest.digest}[/] (the same on every machine that built this set)")
        return
    sources: list[Source] = parse_sources(from_pypi, [str(p) for p in from_git])
    built = build_tasks(sources, sandbox=sandbox, max_per_project=max_per_project or DEFAULT_MAX_PER_PROJECT,
                        seed=seed, workers=workers, deps=deps, pytest_args=pytest_arg, console=console,
                        progress=progress)
    instances = with_splits(built, seed=seed)
    write_instances(out, instances, with_private=with_private)
    rows: dict[str, Counter[str]] = {}
    for inst in instances:
        rows.setdefault(inst.project, Counter())[inst.split or "test"] += 1
    console.print(_split_table(f"{len(instances)} instances", rows))
    warning = empty_split_warning(instances)
    if warning:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    console.print(f"wrote {out}; to use it: [bold]meta-agent tasks import {out} --name NAME[/]")


def _counts(taskset: str) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    """Per project, instances per split; per split, instances per difficulty tier (`none`: imported, or
    built before tiers). Each split file is read (and hash-checked) once."""
    from meta_agent.swe.instance import SPLITS
    from meta_agent.swe.taskset import load_tasks

    projects: dict[str, Counter[str]] = {}
    tiers: dict[str, Counter[str]] = {}
    for split in SPLITS:
        tiers[split] = Counter()
        for inst in load_tasks(split, taskset):
            projects.setdefault(inst.project, Counter())[split] += 1
            tiers[split][inst.tier or "none"] += 1
    return projects, tiers


@app.command(name="import")
def import_(
    file: Annotated[Path, typer.Argument(help="SWE-bench / SWE-Gym / SWE-smith / meta-agent JSONL, or a directory "
                                              "of Harbor tasks")],
    name: Annotated[str | None, typer.Option(help="task set name (default: the file's stem)")] = None,
    split: Annotated[Literal["keep", "auto", "train", "selection", "test"], typer.Option(
        help="keep: the file's split field, else test; auto: assign by (project, file); or put all in one")] = "keep",
    image_template: Annotated[str | None, typer.Option(help=(
        "the container image of each instance the file names none, e.g. "
        "'swebench/sweb.eval.x86_64.{swebench_id}:latest' for SWE-Gym rows ({instance_id} is also filled in)"))]
    = None,
) -> None:
    """Validate a task file and copy it into the task cache as a named set.

    Instances that name a container image (`image`, or SWE-smith's `image_name`, R2E-Gym's `docker_image`) run
    in it, and so does every task of a directory of Harbor tasks (task.toml, instruction.md, environment/,
    tests/; read with Harbor's own code, whose verifier gives the reward): make the images with
    `meta-agent tasks images build --taskset NAME`."""
    from meta_agent.swe.taskset import import_tasks

    manifest = import_tasks(file, name=name or file.stem, split=None if split == "keep" else split,
                            image_template=image_template)
    console.print(f"imported {sum(manifest.counts.values())} instances as task set [bold]{manifest.name}[/]: "
                  + ", ".join(f"{k} {v}" for k, v in manifest.counts.items()))
    empty = [k for k, v in manifest.counts.items() if v == 0]
    if split == "auto" and empty:
        console.print(f"[yellow]warning:[/] split {' and '.join(empty)} came out empty: every bug of one "
                      "(project, file) goes to one split; choose with --split train|selection|test", highlight=False)


@app.command(name="list")
def list_(
    json_: Annotated[bool, typer.Option("--json", help="print JSON (stable keys) instead of tables")] = False,
) -> None:
    """Instance counts per task set, project and split, and per difficulty tier (easy | medium | hard)."""
    from meta_agent.swe.instance import SPLITS
    from meta_agent.swe.taskset import list_tasksets

    manifests = list_tasksets()
    if json_:
        rows = []
        for m in manifests:
            projects, tiers = _counts(m.name)
            rows.append({"name": m.name, "origin": m.origin, "manifest_hash": m.digest, "counts": m.counts,
                         "projects": {p: {s: c[s] for s in SPLITS} for p, c in projects.items()},
                         "tiers": {s: dict(c) for s, c in tiers.items()}})
        typer.echo(json.dumps(rows, indent=2))
        return
    if not manifests:
        console.print("no task sets yet: `meta-agent tasks build --default` or `meta-agent tasks import FILE`")
        return
    for manifest in manifests:
        projects, tiers = _counts(manifest.name)
        console.print(_split_table(f"{manifest.name}: {manifest.origin}", projects))
        console.print("  tiers: " + "; ".join(f"{split} " + ", ".join(f"{t} {n}" for t, n in sorted(c.items()))
                                              for split, c in tiers.items() if c), highlight=False)
        console.print(f"  manifest hash {manifest.digest}", highlight=False)


@app.command()
def show(
    instance_id: Annotated[str, typer.Argument(help="an instance id from `meta-agent tasks list` files")],
    patch: Annotated[bool, typer.Option("--patch", help="also print the gold patch")] = False,
) -> None:
    """Print one instance: problem statement, tests, environment (and the gold patch if asked)."""
    from meta_agent.swe.taskset import find_instance, repo_path

    inst = find_instance(instance_id)
    console.print(f"[bold]{escape(inst.instance_id)}[/]  split={inst.split}  tier={inst.tier or 'none'}  "
                  f"repo={escape(inst.repo)}  base={escape(inst.base_commit[:12])}", highlight=False)
    if inst.image is not None:
        kind = "Harbor task, verifier " + inst.harbor.test_script if inst.harbor else "SWE-bench-family instance"
        console.print(f"image: {inst.image} ({kind}; `meta-agent tasks images list` says if it is built)",
                      highlight=False, markup=False)
    else:
        console.print(f"repository: {repo_path(inst)}", highlight=False, markup=False)
    setup = inst.test_setup()
    console.print(f"setup: python_path={setup.python_path} deps={setup.deps} pytest_args={setup.pytest_args} "
                  f"timeout={setup.timeout_s}s", highlight=False, soft_wrap=True, markup=False)
    console.print(f"FAIL_TO_PASS ({len(inst.FAIL_TO_PASS)}): " + ", ".join(inst.FAIL_TO_PASS[:10]), highlight=False,
                  markup=False)
    console.print(f"PASS_TO_PASS: {len(inst.PASS_TO_PASS)} tests", highlight=False)
    console.print(f"outcomes found as: {inst.graded_as or 'not stated (SWE-bench grades as root)'}\n",
                  highlight=False, markup=False)
    console.print(_shown(inst.problem_statement, "problem statement"), highlight=False, markup=False)
    if patch:
        console.print("\n[bold]gold patch[/]")
        console.print(_shown(inst.patch, "patch"), highlight=False, markup=False)


SHOWN_CHARS = 20_000
"""What `tasks show` prints of a statement or patch: a task file may carry megabytes (`tasks export` has all)."""


def _shown(text: str, what: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return (f"{text[:SHOWN_CHARS]}\n[... {len(text) - SHOWN_CHARS:,} more characters of the {what}; "
            f"`meta-agent tasks export` writes it whole]")


@app.command()
def export(
    out: Annotated[Path, typer.Option(help="JSONL file to write")],
    taskset: Annotated[str, typer.Option(help="task set to export (`meta-agent tasks list`)")] = "default",
    split: Annotated[list[str], typer.Option(help="train | selection | test; repeatable (default: all three)")]
    = [],  # noqa: B006
    with_private: Annotated[bool, typer.Option("--with-private", help="keep the `mutation` field, which "
                                                                      "locates each bug")] = False,
    predictions: Annotated[Path | None, typer.Option(help="instead: a SWE-bench predictions file from this "
                                                          "`meta-agent eval --domain swe --out` JSON")] = None,
    model_name: Annotated[str | None, typer.Option(help="model_name_or_path in predictions (default: the "
                                                        "evaluated policy)")] = None,
) -> None:
    """Write SWE-bench instances of a task set, or SWE-bench predictions from an evaluation."""
    from meta_agent.swe.export import export_taskset, write_predictions
    from meta_agent.swe.instance import SPLITS

    if predictions is not None:
        n = write_predictions(predictions, out, model_name=model_name)
        console.print(f"wrote {n} predictions (instance_id, model_name_or_path, model_patch) to {out}")
        return
    bad = [s for s in split if s not in SPLITS]
    if bad:
        raise typer.BadParameter(f"--split {bad[0]}: use one of {', '.join(SPLITS)}")
    chosen = [s for s in SPLITS if s in split] or list(SPLITS)
    n = export_taskset(taskset, out, splits=chosen, with_private=with_private)
    private = "with" if with_private else "without"
    console.print(f"wrote {n} instances of {taskset} ({', '.join(chosen)}) to {out}, {private} private fields")


@app.command()
def verify(
    taskset: Annotated[str, typer.Option(help="task set to check (`meta-agent tasks list`)")] = "default",
    sample: Annotated[int | None, typer.Option(min=1, help="check N instances spread over projects (default: all)")]
    = None,
    seed: Annotated[int, typer.Option(help="which instances the sample takes")] = 0,
    sandbox: Annotated[str, typer.Option(help="auto | docker | bwrap | process (no isolation)")] = "auto",
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Re-run instances with plain pytest in a fresh venv from each project's sdist; report disagreements.

    Every FAIL_TO_PASS test must fail under the bug, every PASS_TO_PASS test pass, and all of them pass
    with the gold patch. The venvs are cached, so a second run only re-runs the tests. Exit code 1 when
    any instance disagrees.
    """
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from meta_agent.swe.crosscheck import cross_check, verify_envs_dir
    from meta_agent.swe.crosscheck import sample as take_sample
    from meta_agent.swe.instance import SPLITS
    from meta_agent.swe.taskset import load_tasks
    from sandboxes import get_backend
    from sandboxes.identity import sandbox_identity

    backend = get_backend(sandbox)
    everything = [inst for s in SPLITS for inst in load_tasks(s, taskset)]
    chosen = take_sample(everything, sample, seed)
    start = time.monotonic()
    bar = Progress(TextColumn("[bold]verify[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[note]}"),
                   TimeElapsedColumn(), console=console, disable=not progress)
    checks = []
    with bar:
        job = bar.add_task("verify", total=len(chosen), note="")
        for inst in chosen:
            bar.update(job, note=inst.instance_id)
            checks.append(cross_check(inst, backend,
                                      log=lambda line: bar.console.print(line, markup=False, highlight=False)))
            bar.advance(job)
    disagree = [c for c in checks if c.problems]
    skipped = [c for c in checks if c.skipped]
    for c in disagree:
        for problem in c.problems:
            console.print(f"[red]disagrees[/] {escape(c.instance_id)}: {escape(problem)}", soft_wrap=True,
                          highlight=False)
    for c in skipped:
        console.print(f"[yellow]not checked[/] {escape(c.instance_id)}: {escape(c.skipped)}", soft_wrap=True,
                      highlight=False)
    console.print(f"task set {taskset}: {len(checks)} of {len(everything)} instances checked with plain pytest "
                  f"(seed {seed}); {len(disagree)} disagreements, {len(skipped)} not checked; "
                  f"{time.monotonic() - start:.0f} s (venvs cached in {verify_envs_dir()})", highlight=False)
    other = sum(1 for inst in chosen if inst.graded_as != "unprivileged")
    console.print(f"tests ran as {sandbox_identity().describe()}, an unprivileged user"
                  + (f"; {other} of these instances were found as root or do not say (SWE-bench grades as root): "
                     "a test that depends on who runs it can disagree here and not there" if other else
                     ", as every checked instance's lists were found"), highlight=False, soft_wrap=True)
    if disagree or skipped:
        raise typer.Exit(1)


@app.command()
def protocol(
    taskset: Annotated[str, typer.Option(help="task set to check (`meta-agent tasks list`)")] = "default",
    split: Annotated[str, typer.Option(help="train | selection | test")] = "test",
    max_turns: Annotated[int | None, typer.Option(min=1, help="turns per episode (default: swe.scaffold's)")] = None,
    turn_tokens: Annotated[int | None, typer.Option(min=1, help="tokens per turn (default: swe.scaffold's)")] = None,
    sandbox: Annotated[str, typer.Option(help="auto | docker | bwrap | process (no isolation)")] = "auto",
) -> None:
    """Check that the sealed SWE protocol can be passed on a task set: a scripted agent that knows each
    gold fix acts it out in the evaluator's own episodes (one shell command per turn, each reply cut at
    the turn's token budget with SmolLM2's tokenizer) and its diffs are judged by the sealed tests.

    An edit too long for one reply is sent in parts over several turns. An instance it cannot resolve
    cannot be resolved by any policy under these settings (a single changed line too long for a reply, or
    more commands than turns): give it more --turn-tokens / --max-turns, or leave it out.
    Exit code 1 when any instance is not resolved.
    """
    from meta_agent.domains.settings import ScaffoldSettings, SweSettings
    from meta_agent.domains.swe import SweDomain
    from meta_agent.policy import smollm2_tokenizer
    from meta_agent.swe.competent import CompetentAgent
    from meta_agent.swe.instance import SPLITS

    if split not in SPLITS:
        raise typer.BadParameter(f"{split!r}: give one of {', '.join(SPLITS)}", param_hint="--split")
    defaults = ScaffoldSettings()
    scaffold = defaults.model_copy(update={"max_turns": max_turns or defaults.max_turns,
                                           "turn_tokens": turn_tokens or defaults.turn_tokens})
    domain = SweDomain(SweSettings(taskset=taskset, sandbox=sandbox, scaffold=scaffold, train_size=None,
                                   selection_size=None, test_size=None))
    instances = domain.instances(split)
    agent = CompetentAgent(instances, smollm2_tokenizer())
    with console.status(f"acting out {len(instances)} gold fixes under {scaffold.max_turns} turns of "
                        f"{scaffold.turn_tokens} tokens"):
        result = domain.score(agent, instances, split, "competent agent")
    failed = [r for r in result.results if not r.correct]
    for r in failed:
        console.print(f"[red]not resolved[/] {escape(r.task_id)}: {escape(r.detail)}", highlight=False)
    console.print(f"{taskset}/{split}: {len(instances) - len(failed)} of {len(instances)} resolved by the scripted "
                  f"agent under {scaffold.max_turns} turns of {scaffold.turn_tokens} tokens; it needed up to "
                  f"{agent.turns_needed} turns and {agent.tokens_needed} tokens a reply", highlight=False)
    if failed:
        raise typer.Exit(1)
