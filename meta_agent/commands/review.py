"""`meta-agent history`, `show` and `prune`: reviewing an evolution from its git history."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import git
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from meta_agent.review.candidates import CandidateRecord

console = Console()
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON (stable keys) instead of a table")]


def _harness_and_run(path: Path) -> tuple[git.Repo, Path | None]:
    """A harness repo, or a run directory (then its harness and the run itself)."""
    from meta_agent.gitops import open_harness
    from meta_agent.runinfo import RUN_FILE, read_run_info

    path = path.resolve()
    if (path / RUN_FILE).is_file():
        return open_harness(Path(read_run_info(path).harness)), path
    return open_harness(path), None


def _delta(r: CandidateRecord) -> str:
    if r.delta is None:
        return ""
    ci = f" [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]" if r.ci else ""
    return f"{r.delta:+.3f}{ci}"


def _verdict(r: CandidateRecord) -> str:
    if r.merged:
        return "[green]merged[/]"
    return {"rejected": "[red]rejected[/]", "conflict": "[yellow]conflict[/]"}.get(r.verdict, r.verdict)


def history(
    harness: Annotated[Path, typer.Argument(help="a harness repo, or an evolve run directory")] = Path("."),
    all_: Annotated[bool, typer.Option("--all", help="every run's candidates (default: the last run's)")] = False,
    json_: JsonOpt = False,
) -> None:
    """Every candidate per generation, merged and rejected, from git notes and trailers alone.

    For each: the hypothesis, the kind the replay measured, the last stage it reached, its delta on the
    selection split with the CI, and the skills it used and the skills learned from it.
    """
    import json

    from meta_agent.paths import data_dir
    from meta_agent.review.candidates import read_candidates, runs_in_order, with_learned_skills

    repo, run_dir = _harness_and_run(harness)
    records = read_candidates(repo)
    roots = [data_dir() / "skills"] + ([run_dir / "skills"] if run_dir is not None else [])
    records = with_learned_skills(records, roots)
    runs = runs_in_order(repo, records)
    if run_dir is not None:
        runs = [r for r in runs if r == run_dir.name]
    elif not all_:
        runs = runs[-1:]
    grouped = {run: sorted({r.generation for r in records if r.run_id == run}) for run in runs}
    if json_:
        typer.echo(json.dumps({"harness": str(repo.working_dir), "runs": [
            {"run_id": run, "generations": [
                {"generation": g, "candidates": [r.model_dump(mode="json") for r in records
                                                 if r.run_id == run and r.generation == g]}
                for g in gens]}
            for run, gens in grouped.items()]}, indent=2))
        return
    if not runs:
        console.print(f"no candidate in {repo.working_dir} has a verdict note yet: run `meta-agent evolve` on it")
        return
    for run, gens in grouped.items():
        for g in gens:
            table = Table(title=f"{run} · generation {g}", title_justify="left")
            for header in ("cand", "verdict", "kind", "stage", "delta [95% CI]"):
                table.add_column(header, no_wrap=True)
            table.add_column("skills used → learned", overflow="fold")
            here = [r for r in records if r.run_id == run and r.generation == g]
            for r in here:
                skills = ", ".join(r.skills_used) + (f" → {', '.join(r.skills_learned)}" if r.skills_learned else "")
                table.add_row(r.short, _verdict(r), r.measured_kind, r.stage_reached, _delta(r), escape(skills))
            console.print(table)
            for r in here:
                on = f" (built on archived {escape(r.built_on)})" if r.built_on else ""
                console.print(f"  [bold]{r.short}[/] {escape(r.title)}{on}" + (f": {escape(r.hypothesis)}"
                                                                              if r.hypothesis else ""))
    console.print(f"one candidate in full: [bold]meta-agent show g0/c0 {harness}[/]"
                  + ("" if all_ or run_dir is not None else "; every run: --all"))


def show(
    candidate: Annotated[str, typer.Argument(help="g<gen>/c<k> (of the last run, or of the run given as HARNESS) "
                                                  "or a full candidate id such as RUN/0-1")],
    harness: Annotated[Path, typer.Argument(help="a harness repo, or the evolve run directory")] = Path("."),
    json_: JsonOpt = False,
) -> None:
    """One candidate: hypothesis, the rollouts it cited, the diff, every stage's numbers, verdict and why."""
    from meta_agent.review.show import describe

    repo, run_dir = _harness_and_run(harness)
    d = describe(repo, candidate, run_dir)
    if json_:
        typer.echo(d.model_dump_json(indent=2))
        return
    r = d.candidate
    console.print(f"[bold]{r.short}[/] {escape(r.cand_id)} · {escape(r.title)}")
    if r.built_on:
        console.print(f"[bold]built on[/] archived candidate {escape(r.built_on)}: its change is under this one "
                      "(the diff below is this candidate's own; a merge brings both)")
    console.print(f"commit {r.commit or '(no longer in git)'}" + (f" · branch {r.branch}" if r.branch else "")
                  + (f" · merged as {r.merge_commit[:12]}" if r.merge_commit else ""), highlight=False)
    console.print(f"[bold]hypothesis[/] {escape(r.hypothesis)}")
    console.print(f"[bold]predicted[/] {escape(r.predicted_effect)} · declared {r.declared_kind} · "
                  f"measured {r.measured_kind} · skills {', '.join(r.skills_used) or 'none'}")
    if d.intervention:
        console.print(f"[bold]intervention[/] {escape(d.intervention)}")
    if d.cited_rollouts:
        console.print("[bold]cited rollouts[/]")
        for c in d.cited_rollouts:
            line = (f"  {c.rollout_id}: reward {c.reward:.3f}, verified {c.verified}, labels "
                    f"{', '.join(c.labels) or '-'}: {c.completion[:160]!r}" if c.found
                    else f"  {c.rollout_id}: (not in the run's rollouts)")
            console.print(escape(line), highlight=False)
    table = Table("stage", "passed", "seconds", "numbers", "reason", title="stages", title_justify="left")
    for s in r.stages:
        numbers = ", ".join(f"{k}={v}" for k, v in sorted(s.metrics.items()) if not isinstance(v, dict | list))
        table.add_row(s.stage, "yes" if s.passed else "no", f"{s.seconds:.1f}", escape(numbers), escape(s.reason))
    console.print(table)
    console.print(f"[bold]verdict[/] {_verdict(r)} at {r.decided_at}" + (f", delta {_delta(r)}" if r.delta is not None
                                                                         else "") + f": {escape(r.reason)}")
    if d.diff:
        console.print("[bold]diff[/]")
        console.print(d.diff, markup=False, highlight=False)


def prune(run_dir: Annotated[Path, typer.Argument(help="a finished evolve run directory")]) -> None:
    """Delete a finished run's candidate branches (cand/RUN/*) after archiving them in the run directory.

    The verdict notes stay in refs/notes/commits, so `history` and `git log --notes` still show every candidate.
    """
    from meta_agent.review.prune import prune_run

    done = prune_run(run_dir.resolve())
    if not done.branches:
        console.print(f"nothing to prune: {run_dir} has no candidate branches left")
        return
    console.print(f"pruned {len(done.branches)} candidate branches; archived in {done.bundle} (restore with "
                  f"`git fetch {done.bundle} 'refs/heads/cand/*:refs/heads/cand/*'`) and {done.archive} "
                  "(each branch's commit, message and note); the notes stay in refs/notes/commits", highlight=False,
                  soft_wrap=True)  # paths a user copies must not be broken across lines
