"""Shared skills tried as a hostile user would: what import, export and loading refuse, and that one bad
skill never takes the others (or the command) down with it.

The user library is mounted into every sandbox session, so anything a link would pull into it is
readable by sandboxed code: no secret's text may ever land there.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.paths import seed_skills
from meta_agent.skills.skill_files import MAX_FILE_BYTES, SkillError, check_apply
from meta_agent.skills.store import Library, SkillSet, load_skill
from meta_agent.skills.transfer import export_library, import_library

SECRET = "GOLD-PATCH-diff --git a/src/fix.py b/src/fix.py 7f3c"


def _secret(tmp_path: Path) -> Path:
    sealed = tmp_path / "sealed" / "swe-test" / "gold.patch"
    sealed.parent.mkdir(parents=True)
    sealed.write_text(SECRET)
    return sealed


def _skill(library: Path, name: str) -> Path:
    """A valid skill `name` in `library` (a copy of the seed's clip-higher, renamed)."""
    folder = library / name
    shutil.copytree(seed_skills() / "clip-higher", folder)
    md = folder / "SKILL.md"
    md.write_text(md.read_text().replace("name: clip-higher", f"name: {name}"))
    return folder


def _mine(tmp_path: Path) -> SkillSet:
    return SkillSet(seed=Library(root=tmp_path / "seed", writable=False), user=Library.load(tmp_path / "user"))


def _nowhere_in(root: Path, text: str) -> bool:
    return not root.exists() or all(text not in p.read_text(errors="replace")
                                    for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_importing_a_folder_whose_skill_links_to_a_secret_never_copies_the_secret(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    shared = tmp_path / "shared"
    _skill(shared, "good-skill")
    leaky = _skill(shared, "leaky-skill")
    (leaky / "notes.md").symlink_to(secret)
    report = import_library(shared, _mine(tmp_path))
    assert report.added == ["good-skill"]
    assert any("leaky-skill" in p and "symbolic link" in p and str(secret) in p for p in report.skipped)
    assert _nowhere_in(tmp_path / "user", SECRET)
    assert not (tmp_path / "user" / "leaky-skill").exists()


def test_a_skill_folder_that_is_itself_a_link_to_another_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = _skill(tmp_path / "private", "private-skill")
    (elsewhere / "notes.md").write_text(SECRET)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "private-skill").symlink_to(elsewhere)
    report = import_library(shared, _mine(tmp_path))
    assert report.added == [] and any("its folder is a symbolic link" in p for p in report.skipped)
    assert _nowhere_in(tmp_path / "user", SECRET)


def _tarball(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    return info


def _skill_members(name: str) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    source = _skill_folder_bytes(name)
    return [(_member(name, tarfile.DIRTYPE), None)] + [(_member(f"{name}/{f}"), data) for f, data in source.items()]


def _skill_folder_bytes(name: str) -> dict[str, bytes]:
    folder = seed_skills() / "clip-higher"
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    files["SKILL.md"] = files["SKILL.md"].replace(b"name: clip-higher", f"name: {name}".encode())
    return files


def test_a_tarball_with_links_inside_its_own_tree_imports_only_the_skills_without_them(tmp_path: Path) -> None:
    archive = _tarball(tmp_path / "shared.tar.gz", [
        *_skill_members("good-skill"),
        *_skill_members("linked-skill"),
        (_member("linked-skill/notes.md", tarfile.SYMTYPE, "../good-skill/SKILL.md"), None),
        *_skill_members("absolute-link"),
        (_member("absolute-link/gold.patch", tarfile.SYMTYPE, str(_secret(tmp_path))), None),
        *_skill_members("hard-linked"),
        (_member("hard-linked/copy.md", tarfile.LNKTYPE, "good-skill/SKILL.md"), None),
        *_skill_members("with-a-fifo"),
        (_member("with-a-fifo/pipe", tarfile.FIFOTYPE), None),
    ])
    report = import_library(archive, _mine(tmp_path))
    assert report.added == ["good-skill"]
    for name, kind in [("linked-skill", "a link"), ("absolute-link", "a link"), ("hard-linked", "a link"),
                       ("with-a-fifo", "FIFO")]:
        assert any(f"skill {name}:" in p and kind in p for p in report.skipped), (name, report.skipped)
    assert _nowhere_in(tmp_path / "user", SECRET)
    assert sorted(p.name for p in (tmp_path / "user").iterdir()) == ["good-skill"]


def test_a_tarball_that_unpacks_to_gigabytes_is_refused_before_it_is_unpacked(tmp_path: Path) -> None:
    bomb = _member("bomb-skill/zeros.bin")
    bomb.size = 8 * 1024**3
    (tmp_path / "bomb.tar").write_bytes(bomb.tobuf())  # the header is enough: reading on would unpack 8 GiB
    with pytest.raises(SkillError, match="not a skills archive meta-agent imports"):
        import_library(tmp_path / "bomb.tar", _mine(tmp_path))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make", ["fifo", "huge_file", "many_files", "deep"])
def test_a_skill_too_strange_or_too_big_to_bound_is_refused_and_the_others_still_import(
        tmp_path: Path, make: str) -> None:
    shared = tmp_path / "shared"
    _skill(shared, "good-skill")
    odd = _skill(shared, "odd-skill")
    if make == "fifo":  # copying it would block forever
        os.mkfifo(odd / "pipe")
    elif make == "huge_file":
        (odd / "data.bin").write_bytes(b"0" * (MAX_FILE_BYTES + 1))
    elif make == "many_files":
        for i in range(500):
            (odd / f"f{i}.txt").write_text("x")
    else:
        deep = odd.joinpath(*["d"] * 40)
        deep.mkdir(parents=True)
    report = import_library(shared, _mine(tmp_path))
    assert report.added == ["good-skill"]
    assert any("odd-skill" in p and "not imported" in p for p in report.skipped), report.skipped
    assert not (tmp_path / "user" / "odd-skill").exists()


def test_exporting_a_skill_that_links_to_a_secret_is_refused_naming_the_link(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    mine = _skill(tmp_path / "user", "my-skill")
    (mine / "notes.md").symlink_to(secret)
    with pytest.raises(SkillError, match=r"cannot export skill my-skill: my-skill/notes.md is a symbolic link"):
        export_library([load_skill(mine)], tmp_path / "out.tar.gz")
    assert not (tmp_path / "out.tar.gz").exists()


def _library_with_a_bad_skill(root: Path, skill_md: bytes) -> Path:
    user = root / "data" / "skills"
    _skill(user, "fine-skill")
    bad = user / "bad-skill"
    bad.mkdir()
    (bad / "SKILL.md").write_bytes(skill_md)
    return root / "data"


LATIN1 = "---\nname: bad-skill\ndescription: Caf\xe9 r\xe9sum\xe9 written in latin-1 by an old editor.\n---\nbody\n"


def test_skills_list_with_a_latin1_skill_md_lists_the_others_and_names_the_problem(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_AGENT_DATA", str(_library_with_a_bad_skill(tmp_path, LATIN1.encode("latin-1"))))
    result = CliRunner().invoke(app, ["skills", "list", "--json"])
    assert result.exit_code == 0, result.output
    listed = {row["name"] for row in json.loads(result.stdout)}
    assert {"fine-skill", "clip-higher"} <= listed and "bad-skill" not in listed
    assert "bad-skill/SKILL.md: not UTF-8 text" in result.stderr.replace("\n", "")


BILLION_LAUGHS = "---\nname: bad-skill\ndescription: &a [\"lol\", \"lol\", \"lol\", \"lol\"]\n" + "".join(
    f"l{i}: &l{i} [*{'a' if i == 0 else f'l{i - 1}'}, *{'a' if i == 0 else f'l{i - 1}'}]\n" for i in range(40)
) + "---\nbody\n"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("skill_md", "problem"), [
    (LATIN1.encode("latin-1"), "not UTF-8 text"),
    (BILLION_LAUGHS.encode(), "aliases (*name) are not allowed"),
    (("---\nname: bad-skill\ndescription: " + "[" * 5000 + "]" * 5000 + "\n---\n").encode(), "nested deeper than"),
    (b"---\nname: bad-skill\ndescription: x\n---\n" + b"a" * (MAX_FILE_BYTES + 1), "byte limit"),
    (("---\nname: bad-skill\ndescription: A skill.\nlimit: " + "9" * 5000 + "\n---\n").encode(), "not valid YAML"),
])
def test_loading_a_library_reports_a_hostile_skill_md_as_that_skills_problem(
        tmp_path: Path, skill_md: bytes, problem: str) -> None:
    lib = Library.load(_library_with_a_bad_skill(tmp_path, skill_md) / "skills")
    assert list(lib.skills) == ["fine-skill"]
    assert len(lib.problems) == 1 and "bad-skill/SKILL.md" in lib.problems[0] and problem in lib.problems[0]


@pytest.mark.timeout(60)
def test_a_skill_md_that_is_a_fifo_or_a_link_is_a_problem_not_a_hang_or_a_leak(tmp_path: Path) -> None:
    user = tmp_path / "skills"
    _skill(user, "fine-skill")
    for name in ("piped-skill", "linked-skill"):
        (user / name).mkdir()
    os.mkfifo(user / "piped-skill" / "SKILL.md")
    (user / "linked-skill" / "SKILL.md").symlink_to(_secret(tmp_path))
    lib = Library.load(user)
    assert list(lib.skills) == ["fine-skill"]
    assert any("piped-skill/SKILL.md: is not a regular file" in p for p in lib.problems)
    assert any("linked-skill/SKILL.md: is a symbolic link" in p for p in lib.problems)
    assert all(SECRET not in p for p in lib.problems)


@pytest.mark.parametrize(("source", "problem"), [
    ("def apply(harness_dir, params):\n    return " + "(" * 300 + "1" + ")" * 300 + "\n", "too many nested"),
    ("def apply(harness_dir, params):\n    return " + "-" * 100_000 + "1\n", "nested too deeply"),
    ("def apply(harness_dir, params):\n    return " + "+".join(["1"] * 50_000) + "\n", "nested too deeply"),
    ("def apply(harness_dir, params):\n    return 1\n" + "#" * 300_000 + "\n", "over the 200000"),
])
def test_a_hostile_apply_py_is_a_reason_not_a_crash(source: str, problem: str) -> None:
    reason = check_apply(source)
    assert reason is not None and problem in reason
