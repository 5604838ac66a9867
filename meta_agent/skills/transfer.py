"""Moving skills between libraries: export to a tarball or a git repo, import from either.

Import de-duplicates by skill name: a skill new to the target is copied in; one it already has
keeps the target's code and text and gains the evidence it did not have (matched by run and
commit), so two users' measurements of the same skill add up instead of overwriting each other.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import git

from meta_agent.gitops import AUTHOR
from meta_agent.skills.store import Library, Skill, SkillError, SkillSet, load_skill, save_skill

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    merged: dict[str, int] = field(default_factory=dict)
    """skill -> number of evidence entries gained"""
    skipped: list[str] = field(default_factory=list)
    """problems with skills that were not imported"""


def _write(skill: Skill, target: Path) -> None:
    """The skill's folder with its SKILL.md re-rendered from memory, so overlay evidence travels along."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(skill.path, target, ignore=IGNORED)
    save_skill(Skill(meta=skill.meta, body=skill.body, path=target))


def export_library(skills: list[Skill], dest: Path) -> Path:
    """`dest` ending in .tar.gz/.tgz -> a tarball; otherwise a git repo (created or updated, one commit)."""
    if not skills:
        raise SkillError("no skills to export")
    if dest.name.endswith((".tar.gz", ".tgz")):
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(dest.name + ".partial")
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(partial, "w:gz") as tar:
            for s in skills:
                _write(s, Path(tmp) / s.name)
                tar.add(Path(tmp) / s.name, arcname=s.name)
        partial.replace(dest)
        return dest
    repo = git.Repo(dest) if (dest / ".git").exists() else git.Repo.init(dest, initial_branch="main")
    for s in skills:
        _write(s, dest / s.name)
    repo.git.add(A=True)
    if repo.is_dirty(untracked_files=True) or not repo.head.is_valid():
        repo.index.commit(f"Export {len(skills)} skills from meta-agent", author=AUTHOR, committer=AUTHOR)
    return dest


def _unpack(source: Path, tmp: Path) -> Path:
    """A folder holding skill folders, from a tarball, a git repo (local path or URL) or a plain folder."""
    if source.is_file() and source.name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(source) as tar:
            tar.extractall(tmp, filter="data")
        return tmp
    if source.is_dir():
        return source
    try:
        git.Repo.clone_from(str(source), tmp / "clone", depth=1)
    except git.GitCommandError as e:
        raise SkillError(f"{source} is neither a skills tarball, a folder, nor a git repo that can be cloned") from e
    return tmp / "clone"


def import_library(source: Path, skills: SkillSet) -> ImportReport:
    """Import into the user library (the run library when there is none); see the module docstring."""
    target = skills.user or skills.run
    if target is None:
        raise SkillError("no writable skills library to import into")
    report = ImportReport()
    with tempfile.TemporaryDirectory() as tmp:
        incoming = Library.load(_unpack(source, Path(tmp)))
        report.skipped += incoming.problems
        target.root.mkdir(parents=True, exist_ok=True)
        known_names = {s.name for s in skills.all()}
        for name, skill in sorted(incoming.skills.items()):
            if name not in known_names:
                shutil.copytree(skill.path, target.root / name, ignore=IGNORED)
                target.skills[name] = load_skill(target.root / name)
                report.added.append(name)
                continue
            mine = skills.get(name)
            seen = {(e.run, e.commit) for e in mine.meta.evidence}
            new = [e for e in skill.meta.evidence if (e.run, e.commit) not in seen]
            if new:
                mine.meta.evidence = sorted([*mine.meta.evidence, *new], key=lambda e: e.date)
                skills.save(mine)
            report.merged[name] = len(new)
    return report
