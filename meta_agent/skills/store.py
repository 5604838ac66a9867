"""Skill folders on disk: load (broken ones reported, not fatal), save, and a layered set of libraries.

Libraries are searched in order (run library, user library, `--skills` paths, seed library);
the first one holding a name wins. Writes (evidence, retirement) go to a writable library:
a skill from a read-only library is copied into the user library first.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from meta_agent.fsutil import atomic_write_text
from meta_agent.skills.model import APPLY_FILE, SKILL_FILE, SkillMeta


class SkillError(ValueError):
    """A skill folder is malformed; the message names the file and the problem."""


@dataclass
class Skill:
    meta: SkillMeta
    body: str
    path: Path

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def apply_script(self) -> Path | None:
        p = self.path / APPLY_FILE
        return p if p.is_file() else None


def parse_skill_md(text: str, where: Path) -> tuple[SkillMeta, str]:
    if not text.startswith("---"):
        raise SkillError(f"{where}: must start with YAML front matter between '---' lines")
    try:
        _, front, body = text.split("---", 2)
    except ValueError:
        raise SkillError(f"{where}: front matter is not closed with a '---' line") from None
    try:
        data = yaml.safe_load(front) or {}
    except yaml.YAMLError as e:
        raise SkillError(f"{where}: front matter is not valid YAML: {e}") from e
    try:
        meta = SkillMeta.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SkillError(f"{where}: field {loc}: {first['msg']}") from e
    return meta, body.strip() + "\n"


def load_skill(folder: Path) -> Skill:
    md = folder / SKILL_FILE
    if not md.is_file():
        raise SkillError(f"{folder}: no {SKILL_FILE}")
    meta, body = parse_skill_md(md.read_text(encoding="utf-8"), md)
    if meta.name != folder.name:
        raise SkillError(f"{md}: name {meta.name!r} differs from its folder name {folder.name!r}")
    return Skill(meta=meta, body=body, path=folder)


def render_skill_md(meta: SkillMeta, body: str) -> str:
    front = yaml.safe_dump(meta.model_dump(mode="json", exclude_defaults=False), sort_keys=False, width=100)
    return f"---\n{front}---\n\n{body.strip()}\n"


def save_skill(skill: Skill) -> None:
    atomic_write_text(skill.path / SKILL_FILE, render_skill_md(skill.meta, skill.body))


@dataclass
class Library:
    """One folder of skills."""

    root: Path
    writable: bool = True
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, root: Path, writable: bool = True) -> Library:
        lib = cls(root=root, writable=writable)
        if root.is_dir():
            for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
                try:
                    skill = load_skill(folder)
                except SkillError as e:
                    lib.problems.append(str(e))
                    continue
                lib.skills[skill.name] = skill
        return lib


def refresh_from_seed(copy: Skill, seed: Skill) -> Skill:
    """A user-library copy of a seed skill keeps its evidence and status but follows the seed's code and
    text, so upgrading meta-agent upgrades the skill instead of leaving a stale fork behind."""
    if copy.meta.provenance.get("source") != "seed":
        return copy
    for src in seed.path.iterdir():
        if src.is_file() and src.name != SKILL_FILE and (
                not (copy.path / src.name).exists() or (copy.path / src.name).read_bytes() != src.read_bytes()):
            shutil.copyfile(src, copy.path / src.name)
    meta = seed.meta.model_copy(update={"evidence": copy.meta.evidence, "status": copy.meta.status})
    fresh = Skill(meta=meta, body=seed.body, path=copy.path)
    if render_skill_md(fresh.meta, fresh.body) != render_skill_md(copy.meta, copy.body):
        save_skill(fresh)
    return fresh


@dataclass
class SkillSet:
    """Layered libraries, searched in order: run, user, extra (`--skills`), seed. First match wins.

    Evidence and retirement are written to the user library (copy-on-write from the others),
    so what one project learns about a skill follows the user into the next project.
    """

    seed: Library
    user: Library | None = None
    run: Library | None = None
    extra: list[Library] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.user is not None and self.user.writable:
            for name in list(self.user.skills):
                if name in self.seed.skills:
                    self.user.skills[name] = refresh_from_seed(self.user.skills[name], self.seed.skills[name])

    @property
    def libraries(self) -> list[Library]:
        return [lib for lib in (self.run, self.user, *self.extra, self.seed) if lib is not None]

    def problems(self) -> list[str]:
        return [p for lib in self.libraries for p in lib.problems]

    def all(self) -> list[Skill]:
        seen: dict[str, Skill] = {}
        for lib in self.libraries:
            for name, skill in lib.skills.items():
                seen.setdefault(name, skill)
        return sorted(seen.values(), key=lambda s: s.name)

    def get(self, name: str) -> Skill:
        for lib in self.libraries:
            if name in lib.skills:
                return lib.skills[name]
        known = ", ".join(s.name for s in self.all())
        raise KeyError(f"no skill named {name!r}; known: {known}")

    def _update_target(self) -> Library:
        target = self.user or self.run
        if target is None or not target.writable:
            raise SkillError("no writable skills library is configured (user or run library)")
        return target

    def writable_copy(self, name: str) -> Skill:
        """The skill as stored in the update library, copied there first if it lives elsewhere."""
        target = self._update_target()
        if name in target.skills:
            return target.skills[name]
        skill = self.get(name)
        dest = target.root / skill.name
        target.root.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copytree(skill.path, dest, ignore=shutil.ignore_patterns("__pycache__"))
        copy = load_skill(dest)
        target.skills[copy.name] = copy
        return copy

    def add(self, folder: Path) -> Skill:
        """Register a new skill folder written into the run library (and publish it to the user library)."""
        skill = load_skill(folder)
        if self.run is not None:
            self.run.skills[skill.name] = skill
        if self.user is not None and self.user.writable and folder.parent != self.user.root:
            dest = self.user.root / skill.name
            self.user.root.mkdir(parents=True, exist_ok=True)
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("__pycache__"))
            self.user.skills[skill.name] = load_skill(dest)
        return skill
