"""Moving skills between libraries: export to a tarball or a git repo, import from either.

Import de-duplicates by skill name: a skill new to the target is copied in; one it already has
keeps the target's code and text and gains the evidence it did not have (matched by run and
commit), so two users' measurements of the same skill add up instead of overwriting each other.

Skills cross as plain files only (`plain_folder`): the user library is mounted into every sandbox
session, so a skill holding a link, a device or a FIFO, or one too big to bound, is refused whole
and named in the report; a tarball's links and special members are never extracted.
"""

from __future__ import annotations

import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import git

from meta_agent.gitops import AUTHOR
from meta_agent.skills.plain_folder import MAX_ENTRIES, MAX_TOTAL_BYTES, copy_folder, read_folder, write_folder
from meta_agent.skills.store import Library, Skill, SkillError, SkillSet, load_skill, save_skill

MAX_ARCHIVE_MEMBERS = 200 * MAX_ENTRIES
MAX_ARCHIVE_BYTES = 16 * MAX_TOTAL_BYTES
"""What an archive may unpack to: a library of a few hundred skills (the seed library's 15 take 300 KB)."""


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    merged: dict[str, int] = field(default_factory=dict)
    """skill -> number of evidence entries gained"""
    skipped: list[str] = field(default_factory=list)
    """problems with skills that were not imported"""


def _write(skill: Skill, target: Path) -> None:
    """The skill's folder with its SKILL.md re-rendered from memory, so overlay evidence travels along."""
    try:
        copy_folder(skill.path, target)
    except SkillError as e:
        raise SkillError(f"cannot export {e}; leave it out (--name the others) or fix it") from None
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


def _extract(source: Path, tmp: Path) -> list[str]:
    """Extract the archive's regular files and folders into `tmp`; returns why each skill folder holding
    anything else (a link, a device, a FIFO) was left out. Reading stops at the first member past the
    bounds of a whole library, before it is decompressed (a small archive can unpack to gigabytes)."""
    refused: dict[str, str] = {}
    members: list[tarfile.TarInfo] = []
    total = 0
    try:
        with tarfile.open(source) as tar:
            while (member := tar.next()) is not None:
                total += member.size
                if len(members) >= MAX_ARCHIVE_MEMBERS or total > MAX_ARCHIVE_BYTES:
                    raise SkillError(f"{source}: unpacks to more than {MAX_ARCHIVE_MEMBERS} entries or "
                                     f"{MAX_ARCHIVE_BYTES} bytes; not a skills archive meta-agent imports")
                members.append(member)
                skill = _skill_of(member)
                if member.issym() or member.islnk():
                    refused.setdefault(skill, f"{member.name} is a link (to {member.linkname!r})")
                elif not (member.isfile() or member.isdir()):
                    refused.setdefault(skill, f"{member.name} is a device, FIFO or other special file")
            tar.extractall(tmp, members=[m for m in members if _skill_of(m) not in refused],
                           filter="data")
    except (tarfile.TarError, OSError) as e:
        raise SkillError(f"{source}: cannot be read as a skills archive ({e}); export it again with "
                         "`meta-agent skills export`") from None
    return [f"{source}: skill {skill}: {why}; not imported (a shared skill holds only regular files and folders)"
            for skill, why in sorted(refused.items())]


def _skill_of(member: tarfile.TarInfo) -> str:
    """The skill folder an archive member belongs to (its first path component)."""
    return next(iter(PurePosixPath(member.name).parts), "")


def _unpack(source: Path, tmp: Path, report: ImportReport) -> Path:
    """A folder holding skill folders, from a tarball, a git repo (local path or URL) or a plain folder."""
    if source.is_file() and source.name.endswith((".tar.gz", ".tgz", ".tar")):
        report.skipped += _extract(source, tmp)
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
        incoming = Library.load(_unpack(source, Path(tmp), report))
        report.skipped += incoming.problems
        target.root.mkdir(parents=True, exist_ok=True)
        known_names = {s.name for s in skills.all()}
        for name, skill in sorted(incoming.skills.items()):
            try:
                files = read_folder(skill.path)
            except SkillError as e:
                report.skipped.append(f"{source}: {e}; not imported")
                continue
            if name not in known_names:
                write_folder(files, target.root / name)
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
