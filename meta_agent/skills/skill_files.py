"""A skill folder's files: SKILL.md in the Agent Skills format, meta-agent's own fields beside it.

SKILL.md carries only what the Agent Skills format allows at the top of its front matter (`name`,
`description`, and optionally `license`, `compatibility`, `allowed-tools`, `metadata`), so any agent
that reads that format can load a meta-agent skill. What only meta-agent uses (domains, kind,
triggers, params, labels, status, provenance, evidence) lives in `skill.yaml` in the same folder,
which `metadata.meta-agent` points to. A SKILL.md of the older one-file layout (all fields in its
front matter) still loads; it is rewritten in this layout the next time the skill is saved, and
`meta-agent skills validate` reports it.
"""

from __future__ import annotations

import ast
import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.composer import ComposerError
from yaml.nodes import Node

from meta_agent.errors import UserError
from meta_agent.fsutil import atomic_write_text
from meta_agent.skills.model import APPLY_FILE, SKILL_FILE, SKILL_NAME, SkillMeta

SIDECAR_FILE = "skill.yaml"
SPEC_FIELDS = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
"""The only top-level front-matter keys the Agent Skills format accepts."""
POINTER_KEY = "meta-agent"
FENCE = "---"
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_FILE_BYTES = 1024**2
"""Any one file of a skill: the seed library's largest is under 2 KB, and a skill.yaml holding a
thousand evidence entries stays under half of this."""
MAX_APPLY_CHARS = 200_000
"""apply.py longer than this is refused before it is parsed (seed skills' are under 5 KB)."""
MAX_YAML_DEPTH = 20
"""Nesting of a skill's YAML: its fields need 4 levels; PyYAML composes each level by recursion."""


class SkillError(UserError, ValueError):
    """A skill folder is malformed; the message names the file and the problem."""


def split_front_matter(text: str, where: Path) -> tuple[str, str]:
    """(front matter, body): the front matter lies between a first line `---` and the next line that is
    exactly `---`; a `---` inside a value (a description, a YAML string) is not a fence."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != FENCE:
        raise SkillError(f"{where}: must start with YAML front matter between '---' lines")
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip() == FENCE:
            return "".join(lines[1:i]), "".join(lines[i + 1:])
    raise SkillError(f"{where}: front matter is not closed with a '---' line")


def read_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of one file of a skill, which must be a regular file (opened without following a link or
    blocking on a FIFO) of at most `limit` bytes: skills come from other people and from LLMs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        why = "is a symbolic link" if e.errno == errno.ELOOP else f"cannot be opened ({e.strerror})"
        raise SkillError(f"{path}: {why}; a skill's files must be regular files") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(f"{path}: is not a regular file (a FIFO, socket or device)")
        chunks: list[bytes] = []
        remaining = limit + 1 if info.st_size <= limit else 0
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
            chunks.append(chunk)
            remaining -= len(chunk)
        if info.st_size > limit or remaining <= 0:
            raise SkillError(f"{path}: over the {limit}-byte limit for one file of a skill")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """`read_file` decoded as UTF-8 (a SkillError naming the byte offset when it is not)."""
    data = read_file(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SkillError(f"{path}: not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r}); "
                         "save it as UTF-8") from None


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (a few lines of `&a [*a, *a]` stand for billions of nodes to whoever
    walks the result) and nesting deeper than MAX_YAML_DEPTH (each level is one Python call deeper)."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            raise ComposerError(None, None, "aliases (*name) are not allowed in a skill's YAML", mark)
        if self._depth >= MAX_YAML_DEPTH:
            raise ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def yaml_mapping(text: str, where: Path, what: str) -> dict[str, Any]:
    """The YAML mapping in `text` (a SkillError naming `where` and `what` when it is not one, or is a bomb)."""
    try:
        data = yaml.load(text, Loader=_BoundedLoader) or {}
    except (yaml.YAMLError, ValueError) as e:  # ValueError: a typed scalar that does not convert (`!!int 0xZZ`)
        raise SkillError(f"{where}: {what} is not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise SkillError(f"{where}: {what} must be a mapping of keys to values, not {type(data).__name__}")
    return data


def parse_skill_md(text: str, where: Path, sidecar: str | None = None) -> tuple[SkillMeta, str]:
    """The skill's fields and body from SKILL.md `text` (+ the text of its skill.yaml, if it has one)."""
    front_text, body = split_front_matter(text, where)
    front = yaml_mapping(front_text, where, "front matter")
    fields = {k: v for k, v in front.items() if k not in SPEC_FIELDS or k in ("name", "description")}
    if sidecar is not None:
        side = yaml_mapping(sidecar, where.with_name(SIDECAR_FILE), SIDECAR_FILE)
        fields = {**side, **fields}
    try:
        meta = SkillMeta.model_validate(fields)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SkillError(f"{where}: field {loc}: {first['msg']}") from e
    return meta, body.strip() + "\n"


def read_skill_files(folder: Path) -> tuple[SkillMeta, str]:
    md, side = folder / SKILL_FILE, folder / SIDECAR_FILE
    if not os.path.lexists(md):
        raise SkillError(f"{folder}: no {SKILL_FILE}")
    sidecar = read_text(side) if os.path.lexists(side) else None
    return parse_skill_md(read_text(md), md, sidecar)


def render_skill_md(meta: SkillMeta, body: str) -> str:
    """SKILL.md in the Agent Skills format: name, description and a pointer to skill.yaml."""
    front = yaml.safe_dump({"name": meta.name, "description": meta.description,
                            "metadata": {POINTER_KEY: SIDECAR_FILE}}, sort_keys=False, width=100)
    return f"---\n{front}---\n\n{body.strip()}\n"


def render_sidecar(meta: SkillMeta) -> str:
    data = meta.model_dump(mode="json", exclude={"name", "description"}, exclude_none=True)
    return ("# meta-agent's fields of this skill (SKILL.md holds its name, description and text)\n"
            + yaml.safe_dump(data, sort_keys=False, width=100))


def write_skill_files(folder: Path, meta: SkillMeta, body: str) -> None:
    """Write SKILL.md and skill.yaml (each by rename; skill.yaml first, so a SKILL.md pointing to it
    never stands without it)."""
    atomic_write_text(folder / SIDECAR_FILE, render_sidecar(meta))
    atomic_write_text(folder / SKILL_FILE, render_skill_md(meta, body))


def agent_skills_problems(folder: Path) -> list[str]:
    """What keeps `folder` from being a valid Agent Skills skill (empty when it is one)."""
    md = folder / SKILL_FILE
    if not os.path.lexists(md):
        return [f"{folder}: no {SKILL_FILE}"]
    try:
        front = yaml_mapping(split_front_matter(read_text(md), md)[0], md, "front matter")
    except SkillError as e:
        return [str(e)]
    problems = []
    unexpected = sorted(str(k) for k in front if k not in SPEC_FIELDS)
    if unexpected:
        problems.append(f"{md}: unexpected fields in front matter: {', '.join(unexpected)} (the Agent Skills "
                        f"format allows {', '.join(SPEC_FIELDS)}; meta-agent keeps its own in {SIDECAR_FILE})")
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not re.fullmatch(SKILL_NAME, name) or len(name) > 64:
        problems.append(f"{md}: name {name!r} must be 1-64 lowercase letters, digits and single hyphens")
    elif name != folder.name:
        problems.append(f"{md}: name {name!r} differs from its folder name {folder.name!r}")
    if not isinstance(description, str) or not description.strip() or len(description) > MAX_DESCRIPTION:
        problems.append(f"{md}: description must be a non-empty string of at most {MAX_DESCRIPTION} characters")
    compat = front.get("compatibility")
    if compat is not None and (not isinstance(compat, str) or len(compat) > MAX_COMPATIBILITY):
        problems.append(f"{md}: compatibility must be a string of at most {MAX_COMPATIBILITY} characters")
    metadata = front.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict)
                                 or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        problems.append(f"{md}: metadata must map strings to strings")
    return problems


def meta_agent_problems(folder: Path) -> list[str]:
    """What keeps `folder` from loading as a meta-agent skill: its fields, and apply.py's entry point."""
    problems = []
    try:
        meta, _body = read_skill_files(folder)
        if meta.name != folder.name:
            problems.append(f"{folder / SKILL_FILE}: name {meta.name!r} differs from its folder name {folder.name!r}")
    except SkillError as e:
        problems.append(str(e))
    script = folder / APPLY_FILE
    if os.path.lexists(script):
        try:
            problem = check_apply(read_text(script))
        except SkillError as e:
            problem = str(e)
        if problem:
            problems.append(f"{script}: {problem}")
    return problems


def check_apply(source: str) -> str | None:
    """Why an apply.py cannot work, or None (it runs later, sandboxed; here only its shape is checked)."""
    if len(source) > MAX_APPLY_CHARS:
        return f"apply_py is {len(source)} characters, over the {MAX_APPLY_CHARS} a skill's edit may take"
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return f"apply_py has a syntax error at line {e.lineno}: {e.msg}"
    except (MemoryError, RecursionError) as e:  # nesting past the parser's own stacks (not memory running out)
        return f"apply_py cannot be parsed ({type(e).__name__}): nested too deeply; write it as plain statements"
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply"), None)
    if fn is None or len(fn.args.args) != 2:
        return "apply_py must define a top-level `def apply(harness_dir, params)`"
    return None
