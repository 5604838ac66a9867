"""A skill folder as plain data: how a skill is copied between libraries.

Skills come from outside: an import of someone's export, an LLM's skill writer, a plugin proposer.
The user library they land in is mounted (read-only) into every sandbox session, so copying a folder
that holds a symbolic link would put whatever the link points to (a sealed split's gold patch, a key)
where sandboxed code reads it; a FIFO or device blocks or floods the reader; a huge file, thousands
of files or deep nesting cost memory and time before anything is checked. So a skill folder is read
as data (regular files and folders only, files opened without following links, bounded in size,
count and depth) and written back from that data; anything else refuses the whole skill, with why.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path, PurePosixPath

from meta_agent.skills.skill_files import MAX_FILE_BYTES, SkillError, read_file

MAX_ENTRIES = 100
"""Files and folders in one skill (a seed skill has 3 or 4 files)."""
MAX_TOTAL_BYTES = 4 * MAX_FILE_BYTES
MAX_DEPTH = 4
"""Folder levels below the skill's own folder."""
SKIPPED = ("__pycache__",)
"""Left behind, never copied: Python's caches, rebuilt wherever the skill runs."""

Files = dict[PurePosixPath, bytes]
"""A skill folder's content: path relative to the folder -> bytes (folders are implied by the paths)."""


def read_folder(folder: Path) -> Files:
    """Every file of the skill `folder`; a SkillError listing what is not plain data (or over a bound)."""
    name = folder.name
    if stat.S_ISLNK(os.lstat(folder).st_mode):
        raise SkillError(f"skill {name}: its folder is a symbolic link (to {os.readlink(folder)!r}); "
                         "a skill is a folder of regular files")
    files: Files = {}
    problems: list[str] = []
    entries = total = 0
    stack = [(folder, PurePosixPath())]
    while stack and len(problems) < 5:
        here, rel_dir = stack.pop()
        for entry in sorted(os.scandir(here), key=lambda e: e.name):
            rel = rel_dir / entry.name
            entries += 1
            if entries > MAX_ENTRIES:
                raise SkillError(f"skill {name}: more than {MAX_ENTRIES} files and folders; a skill is a few "
                                 "small files (SKILL.md, skill.yaml, apply.py, examples)")
            info = entry.stat(follow_symlinks=False)
            if entry.name in SKIPPED or entry.name.endswith(".pyc"):
                continue
            if stat.S_ISLNK(info.st_mode):
                problems.append(f"{name}/{rel} is a symbolic link (to {os.readlink(entry.path)!r})")
            elif stat.S_ISDIR(info.st_mode):
                if len(rel.parts) >= MAX_DEPTH:
                    problems.append(f"{name}/{rel} is nested more than {MAX_DEPTH} folders deep")
                else:
                    stack.append((Path(entry.path), rel))
            elif not stat.S_ISREG(info.st_mode):
                problems.append(f"{name}/{rel} is not a regular file (a FIFO, socket or device)")
            elif info.st_size > MAX_FILE_BYTES:
                problems.append(f"{name}/{rel} is {info.st_size} bytes, over the {MAX_FILE_BYTES} of one file")
            else:
                total += info.st_size
                if total > MAX_TOTAL_BYTES:
                    raise SkillError(f"skill {name}: its files add up to more than {MAX_TOTAL_BYTES} bytes")
                try:
                    files[rel] = read_file(Path(entry.path))
                except SkillError as e:  # swapped for something else since the scan
                    problems.append(str(e))
    if problems:
        raise SkillError(f"skill {name}: " + "; ".join(problems) + " (a shared skill holds only regular files and "
                         "folders: remove what is listed)")
    return files


def folder_problems(folder: Path) -> list[str]:
    """Why `folder` cannot be copied as a skill (empty when it can)."""
    try:
        read_folder(folder)
    except SkillError as e:
        return [str(e)]
    return []


def write_folder(files: Files, dest: Path) -> None:
    """Write `files` as the folder `dest`, replacing it whole: built beside it under a dot name (which
    no library loads) and renamed into place, so a kill never leaves half a skill."""
    partial = dest.with_name(f".{dest.name}.partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    for rel, data in files.items():
        path = partial.joinpath(*rel.parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if dest.is_symlink() or dest.is_file():
        dest.unlink()
    elif dest.exists():
        shutil.rmtree(dest)
    partial.rename(dest)


def copy_folder(src: Path, dest: Path) -> None:
    """Copy the skill folder `src` to `dest` as plain data (SkillError, and nothing written, if it is not)."""
    write_folder(read_folder(src), dest)
