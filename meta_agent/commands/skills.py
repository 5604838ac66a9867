"""`meta-agent skills ...`: the skills library (seed, user-level, and any `--skills` libraries)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from meta_agent.commands.app import App, errors
from meta_agent.errors import UserError
from meta_agent.skills.model import SKILL_FILE
from meta_agent.skills.store import Skill, SkillSet, default_skill_set

app = App(help="List, search, show, validate, export, import and retire skills.")
console = Console()
ExtraOpt = Annotated[list[Path] | None, typer.Option("--skills", help="extra skills library (repeatable)")]


def _where(skills: SkillSet, skill: Skill) -> str:
    for label, lib in (("run", skills.run), ("user", skills.user), ("seed", skills.seed)):
        if lib is not None and lib.skills.get(skill.name) is skill:
            return label
    return str(skill.path.parent)


def _record(skill: Skill) -> str:
    tests = [e for e in skill.meta.evidence if e.applicable]
    return f"{sum(1 for e in tests if e.won)}/{len(tests)}"


def _status(skill: Skill) -> str:
    m = skill.meta
    if m.status == "retired":
        return "retired"
    return f"retired in {','.join(m.retired_in)}" if m.retired_in else "active"


def _load(extra: list[Path] | None, quiet: bool = False) -> SkillSet:
    """The layered libraries; broken skills are reported (on stderr when stdout carries JSON)."""
    skills = default_skill_set(extra or [])
    for problem in skills.problems():
        (errors if quiet else console).print(f"[yellow]skipped a broken skill:[/] {problem}")
    return skills


@app.command("list")
def list_(
    domain: Annotated[str | None, typer.Option(help="only skills for this domain")] = None,
    all_: Annotated[bool, typer.Option("--all", help="include retired skills")] = False,
    skills: ExtraOpt = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON (stable keys) instead of a table")] = False,
) -> None:
    """Every skill with its kind, status, win record (wins/tests) and library."""
    lib = _load(skills, quiet=json_)
    chosen = [s for s in lib.all() if not (domain and not s.meta.applies_to(domain)) and (
        all_ or (s.meta.active_in(domain) if domain else s.meta.status != "retired"))]
    if json_:
        rows = [{"name": s.name, "kind": s.meta.kind, "domains": s.meta.domains, "status": s.meta.status,
                 "retired_in": s.meta.retired_in, "wins": sum(1 for e in s.meta.evidence if e.applicable and e.won),
                 "tests": sum(1 for e in s.meta.evidence if e.applicable), "library": _where(lib, s),
                 "path": str(s.path), "description": s.meta.description} for s in chosen]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table()
    for header in ("skill", "kind", "domains", "status", "won", "library"):
        table.add_column(header, no_wrap=True)
    table.add_column("when to use", ratio=1)
    for s in chosen:
        table.add_row(s.name, s.meta.kind, ",".join(s.meta.domains), _status(s), _record(s), _where(lib, s),
                      s.meta.description)
    console.print(table)


@app.command()
def show(name: str, skills: ExtraOpt = None) -> None:
    """One skill: front matter, body and its evidence."""
    s = _load(skills).get(name)
    m = s.meta
    console.print(f"[bold]{m.name}[/] ({m.kind}, {_status(s)}) — {m.description}")
    console.print("triggers: " + "; ".join(t.describe() for t in m.triggers))
    console.print(Markdown(s.body))
    table = Table("date", "run", "commit", "domain", "metric", "delta", "CI", "verdict", title="evidence")
    for e in m.evidence:
        ci = f"[{e.ci[0]:+.3f}, {e.ci[1]:+.3f}]" if e.ci else ""
        delta = f"{e.delta:+.3f}" if e.delta is not None else ""
        table.add_row(e.date, e.run, e.commit[:10], e.domain, e.metric, delta, ci, f"{e.verdict} {e.stage}")
    console.print(table)


@app.command()
def search(query: str, domain: Annotated[str | None, typer.Option()] = None, skills: ExtraOpt = None) -> None:
    """Skills ranked by text similarity to QUERY (e.g. a failure mode: 'truncated answers')."""
    from meta_agent.skills.retrieve import search as rank_text

    table = Table("score", "skill", "kind", "when to use")
    for s, score in rank_text(_load(skills), query, domain)[:10]:
        table.add_row(f"{score:.2f}", s.name, s.meta.kind, s.meta.description)
    console.print(table)


@app.command("export")
def export_(
    dest: Annotated[Path, typer.Argument(help="a .tar.gz file, or a directory to make (or update) a git repo in")],
    names: Annotated[list[str] | None, typer.Option("--name", help="only these skills (repeatable)")] = None,
    skills: ExtraOpt = None,
) -> None:
    """Export skills with their evidence, to share them or carry them to another machine."""
    from meta_agent.skills.transfer import export_library

    lib = _load(skills)
    chosen = [lib.get(n) for n in names] if names else lib.all()
    out = export_library(chosen, dest.resolve())
    console.print(f"exported {len(chosen)} skills to {out}")


@app.command("import")
def import_(source: Annotated[Path, typer.Argument(help="a tarball, a folder of skills, or a git repo")]) -> None:
    """Import skills into your user library; skills you already have gain the other side's evidence."""
    from meta_agent.skills.transfer import import_library

    report = import_library(source, _load(None))
    console.print(f"added {len(report.added)}: {', '.join(report.added) or '-'}")
    merged = {k: v for k, v in report.merged.items() if v}
    console.print(f"merged evidence into {len(merged)}: " + ", ".join(f"{k} (+{v})" for k, v in merged.items()))
    for problem in report.skipped:
        console.print(f"[yellow]skipped:[/] {problem}")


@app.command()
def retire(
    name: str,
    undo: Annotated[bool, typer.Option("--undo", help="re-activate a retired skill")] = False,
    domain: Annotated[str | None, typer.Option(help="only in this domain (default: everywhere)")] = None,
    skills: ExtraOpt = None,
) -> None:
    """Retire a skill (proposers stop offering it), or bring it back with --undo; in one domain or all."""
    from meta_agent.skills.evidence import set_status

    lib = _load(skills)
    set_status(lib, name, retired=not undo, domain=domain)
    console.print(f"{name}: {_status(lib.get(name))}")


@app.command()
def validate(
    path: Annotated[Path | None, typer.Argument(
        help="a skill folder, or a library (a folder of skill folders); default: your user library")] = None,
) -> None:
    """Check skills against the Agent Skills format (SKILL.md front matter: name, description, allowed keys) and
    against meta-agent's own rules (skill.yaml fields, apply.py's `apply(harness_dir, params)`, plain bounded
    files only: what import and export accept). Exit 1 on any problem; each problem names its file."""
    from meta_agent.paths import data_dir
    from meta_agent.skills.plain_folder import folder_problems
    from meta_agent.skills.skill_files import agent_skills_problems, meta_agent_problems

    root = path if path is not None else data_dir() / "skills"
    if not root.is_dir():
        raise UserError(f"{root} is not a folder: pass a skill folder or a library of skill folders")
    folders = [root] if (root / SKILL_FILE).is_file() else sorted(
        p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if not folders:
        raise UserError(f"{root} holds no skill folders (a skill is a folder with a {SKILL_FILE})")
    bad = 0
    for folder in folders:
        problems = list(dict.fromkeys(agent_skills_problems(folder) + meta_agent_problems(folder)
                                      + folder_problems(folder)))
        bad += bool(problems)
        if problems:
            console.print(f"[red]✗[/] {folder.name}")
            for problem in problems:
                console.print(f"    {problem}", markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(f"[green]✓[/] {folder.name}")
    console.print(f"{len(folders) - bad} of {len(folders)} skills valid")
    if bad:
        raise typer.Exit(1)
