"""Skill folders on disk: load (broken ones reported, not fatal), save, and a layered set of libraries.

Libraries are searched in order (run library, user library, `--skills` paths, seed library);
the first one holding a name wins. Writes (evidence, retirement) go to a writable library: for a
skill from a read-only library, to an overlay file in the user library. Loading never fails on one
skill: whatever is wrong with its files (not UTF-8, too big, a YAML bomb) is that skill's problem.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from meta_agent.errors import UserError, failure_text
from meta_agent.fsutil import atomic_write_text
from meta_agent.skills.model import APPLY_FILE, SKILL_FILE, DomainTag, Evidence, SkillMeta
from meta_agent.skills.plain_folder import copy_folder, read_folder
from meta_agent.skills.skill_files import (  # noqa: F401 - SkillError and the parsers are used from here too
    SkillError,
    parse_skill_md,
    read_skill_files,
    read_text,
    render_skill_md,
    split_front_matter,
    write_skill_files,
    yaml_mapping,
)


class UnknownSkill(UserError, KeyError):
    """No library holds a skill of that name (the message lists the known ones)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown skill"


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


def load_skill(folder: Path) -> Skill:
    meta, body = read_skill_files(folder)
    if meta.name != folder.name:
        raise SkillError(f"{folder / SKILL_FILE}: name {meta.name!r} differs from its folder name {folder.name!r}")
    return Skill(meta=meta, body=body, path=folder)


def save_skill(skill: Skill) -> None:
    write_skill_files(skill.path, skill.meta, skill.body)


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
                except Exception as e:  # one skill's files, whatever they hold, are that skill's problem
                    lib.problems.append(f"{folder}: cannot be loaded ({failure_text(e, 300)}); fix or remove it")
                    continue
                lib.skills[skill.name] = skill
        return lib


OVERLAY_DIR = ".overlay"
"""In the user library: evidence and status for skills whose folders live elsewhere (seed, --skills)."""


class _Overlay(BaseModel):
    """One `.overlay/<name>.yaml`: what the user's runs measured of a skill kept in another library."""

    status: Literal["active", "retired"] | None = None
    retired_in: list[DomainTag] | None = None
    evidence: list[Evidence] = Field(default_factory=list)


@dataclass
class SkillSet:
    """Layered libraries, searched in order: run, user, extra (`--skills`), seed. First match wins.

    Evidence and status changes of a skill stored in the run or user library are written into its
    SKILL.md. For a skill from the seed or an extra library they go to an overlay file in the user
    library (`.overlay/<name>.yaml`), never to a copy of its code: the user's evidence follows them
    from project to project while the skill's code keeps coming from its own library.
    """

    seed: Library
    user: Library | None = None
    run: Library | None = None
    extra: list[Library] = field(default_factory=list)

    def __post_init__(self) -> None:
        for lib in (*self.extra, self.seed):
            for skill in lib.skills.values():
                state = self._overlay_path(skill.name)
                if state is None or not os.path.lexists(state):
                    continue
                try:
                    overlay = _Overlay.model_validate(yaml_mapping(read_text(state), state, "overlay"))
                except (SkillError, ValidationError) as e:
                    holder = self.user or self.run
                    assert holder is not None  # an overlay path comes from one of them
                    holder.problems.append(f"{state}: not a valid overlay ({failure_text(e, 300)}); {skill.name} is "
                                           "used without the evidence recorded there: fix or remove the file")
                    continue
                skill.meta = skill.meta.model_copy(update={
                    "evidence": overlay.evidence, "status": overlay.status or skill.meta.status,
                    "retired_in": skill.meta.retired_in if overlay.retired_in is None else overlay.retired_in})

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
        raise UnknownSkill(f"no skill named {name!r}; known: {known}")

    def _overlay_path(self, name: str) -> Path | None:
        target = self.user or self.run
        return target.root / OVERLAY_DIR / f"{name}.yaml" if target is not None else None

    def save(self, skill: Skill) -> None:
        """Persist a changed skill's evidence and status where they belong (see class docstring)."""
        owned = any(lib.writable and lib.skills.get(skill.name) is skill for lib in (self.run, self.user)
                    if lib is not None)
        if owned:
            save_skill(skill)
            return
        path = self._overlay_path(skill.name)
        if path is None:
            raise SkillError("no writable skills library is configured (user or run library)")
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {"status": skill.meta.status, "retired_in": skill.meta.retired_in,
                 "evidence": [e.model_dump(mode="json") for e in skill.meta.evidence]}
        atomic_write_text(path, yaml.safe_dump(state, sort_keys=False))

    def add(self, folder: Path, origin: dict[str, str] | None = None) -> Skill:
        """Publish a learned skill written into the run library: to the user library, under a name no
        other skill holds (`<name>-2`, ...), with no evidence of its own yet. `origin` (run, candidate,
        run_dir: the learning step that wrote it) replaces what the writer claimed in its provenance.

        Nothing that exists is changed: a learned skill that means to revise a skill (provenance
        `revises`) is published beside it, and earns its own record; the user compares the two.
        """
        read_folder(folder)  # refused before anything is renamed or copied
        found = load_skill(folder)
        provenance = {**found.meta.provenance, **(origin or {})}
        # Evidence travels with measurements, not with text: a revision copies its predecessor's record
        skill = Skill(meta=found.meta.model_copy(update={"provenance": provenance, "evidence": []}),
                      body=found.body, path=folder)
        save_skill(skill)
        if self._taken(skill.name, skill):
            skill = _rename(skill, self._free_name(skill))
        if self.user is not None and self.user.writable and skill.path.parent != self.user.root:
            dest = self.user.root / skill.name
            self.user.root.mkdir(parents=True, exist_ok=True)
            copy_folder(skill.path, dest)
            self.user.skills[skill.name] = load_skill(dest)
        if self.run is not None:
            self.run.skills[skill.name] = skill
        return skill

    def _taken(self, name: str, new: Skill) -> bool:
        """A skill other than `new` holds `name` in some library, or a folder there that did not load does.
        The same learning step's own earlier publication (redone after a crash) does not count."""
        for lib in self.libraries:
            held = lib.skills.get(name)
            if held is not None and held.path != new.path and not _same_origin(held, new):
                return True
            if held is None and lib.root / name != new.path and os.path.lexists(lib.root / name):
                return True
        return False

    def _free_name(self, new: Skill) -> str:
        """`<name>-2`, `-3`, ...: the first no other skill holds."""
        names = (f"{new.name[:60]}-{i}" for i in range(2, 10_000))
        return next(n for n in names if not self._taken(n, new))


def _same_origin(a: Skill, b: Skill) -> bool:
    """Both written by the same learning step: the same run (and run folder, when recorded) and candidate."""
    pa, pb = a.meta.provenance, b.meta.provenance
    keys = ("run", "candidate", "run_dir")
    return bool(pa.get("run")) and all(pa.get(k) == pb.get(k) for k in keys)


def _rename(skill: Skill, name: str) -> Skill:
    """Move a skill's folder (in the run library) to `name` and give its SKILL.md that name."""
    dest = skill.path.with_name(name)
    if dest.exists():
        shutil.rmtree(dest)
    skill.path.rename(dest)
    renamed = Skill(meta=skill.meta.model_copy(update={"name": name}), body=skill.body, path=dest)
    save_skill(renamed)
    return renamed


def default_skill_set(extra: list[Path] | None = None, run_dir: Path | None = None) -> SkillSet:
    """Seed library + the user library (across projects) + `--skills` libraries (+ a run's own library)."""
    from meta_agent.paths import data_dir, seed_skills

    return SkillSet(
        seed=Library.load(seed_skills(), writable=False),
        user=Library.load(data_dir() / "skills"),
        run=Library.load(run_dir / "skills") if run_dir is not None else None,
        extra=[Library.load(p.resolve(), writable=False) for p in extra or []],
    )
