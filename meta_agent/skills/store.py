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

from meta_agent.errors import UserError
from meta_agent.fsutil import atomic_write_text
from meta_agent.skills.model import APPLY_FILE, SKILL_FILE, Evidence, SkillMeta
from meta_agent.skills.skill_files import (  # noqa: F401 - SkillError and the parsers are used from here too
    SkillError,
    parse_skill_md,
    read_skill_files,
    render_skill_md,
    split_front_matter,
    write_skill_files,
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
                lib.skills[skill.name] = skill
        return lib


OVERLAY_DIR = ".overlay"
"""In the user library: evidence and status for skills whose folders live elsewhere (seed, --skills)."""


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
                if state is not None and state.is_file():
                    data = yaml.safe_load(state.read_text()) or {}
                    skill.meta = skill.meta.model_copy(update={
                        "evidence": [Evidence.model_validate(e) for e in data.get("evidence", [])],
                        "status": data.get("status", skill.meta.status),
                        "retired_in": list(data.get("retired_in", skill.meta.retired_in)),
                    })

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

    def add(self, folder: Path) -> Skill:
        """Register a new skill folder written into the run library (and publish it to the user library).

        A learned skill never silently shadows one another library holds under its name: it is renamed
        (`<name>-2`, ...), unless it says it `revises` that skill (provenance), in which case the
        previous version is kept, retired, as `<name>-v<N>` in the writable library.
        """
        skill = load_skill(folder)
        previous = self._holder(skill)
        if previous is not None:
            if skill.meta.provenance.get("revises") == skill.name:
                self._keep_previous(previous)
            else:
                skill = _rename(skill, self._free_name(skill))
                folder = skill.path
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


    def _holder(self, new: Skill) -> Skill | None:
        """The skill a library other than the run's holds under `new`'s name (the same learned skill
        published before a crash, with the same run and candidate, does not count)."""
        for lib in self.libraries:
            held = lib.skills.get(new.name)
            if lib is not self.run and held is not None:
                return None if _same_origin(held, new) else held
        return None

    def _free_name(self, new: Skill) -> str:
        """`<name>-2`, `-3`, ...: the first no other skill holds (one published by this same learning
        step before a crash is this skill, so its name is reused)."""
        held = {s.name: s for s in self.all()}
        names = (f"{new.name[:60]}-{i}" for i in range(2, 10_000))
        return next(n for n in names if n not in held or _same_origin(held[n], new))

    def _keep_previous(self, previous: Skill) -> None:
        target = self.user or self.run
        if target is None:
            raise SkillError("no writable skills library to keep the revised skill's previous version in")
        taken = {s.name for s in self.all()}
        version = next(i for i in range(1, 10_000) if f"{previous.name[:60]}-v{i}" not in taken)
        name = f"{previous.name[:60]}-v{version}"
        meta = previous.meta.model_copy(update={
            "name": name, "status": "retired", "provenance": {**previous.meta.provenance, "superseded_by":
                                                                previous.name}})
        dest = target.root / name
        target.root.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(previous.path, dest, ignore=shutil.ignore_patterns("__pycache__"))
        kept = Skill(meta=meta, body=previous.body, path=dest)
        save_skill(kept)
        target.skills[name] = kept


def _same_origin(a: Skill, b: Skill) -> bool:
    """Both written by the same learning step (run and candidate) of some run."""
    pa, pb = a.meta.provenance, b.meta.provenance
    return bool(pa.get("run")) and (pa.get("run"), pa.get("candidate")) == (pb.get("run"), pb.get("candidate"))


def _rename(skill: Skill, name: str) -> Skill:
    """Move a skill's folder to `name` and give its SKILL.md that name."""
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
