"""Source distributions from PyPI: download once, verify by sha256, extract safely.

An sdist (unlike a wheel) usually carries the project's test suite, which is what a
bug-fix task needs. Downloads go through pip, the registry's ordinary client, in a sandbox (pip
prepares an sdist's metadata by running its build code; swe/pip_sandbox.py), and are cached under
cache_dir()/swe/sdists/ so a rebuild never touches the network.
"""

from __future__ import annotations

import re
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

from meta_agent.fsutil import sha256_file
from meta_agent.paths import cache_dir
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.pip_sandbox import host_python, run_pip
from sandboxes import Sandbox

PROJECT_NAME = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]{0,98}[A-Za-z0-9])$")
"""PEP 508 project names (bounded): nothing that pip could read as an option, a path or a URL."""


def sdist_dir() -> Path:
    return cache_dir() / "swe" / "sdists"


def parse_requirement(spec: str) -> tuple[str, str]:
    """`name==version` -> (name, version); sdists must be pinned so a task set is reproducible."""
    name, sep, version = spec.partition("==")
    if not sep or not name.strip() or not version.strip():
        raise SweTaskError(f"--from-pypi {spec!r}: pin an exact version, e.g. inflection==0.5.1")
    check_pin(name.strip(), version.strip())
    return name.strip(), version.strip()


def check_pin(name: str, version: str) -> None:
    """SweTaskError unless `name` is a plain project name and `version` a PEP 440 version."""
    if not PROJECT_NAME.match(name):
        raise SweTaskError(f"{name[:100]!r} is not a PyPI project name (letters, digits, '.', '_', '-')")
    try:
        Version(version)
    except InvalidVersion:
        raise SweTaskError(f"{name}: {version[:100]!r} is not a version (e.g. 0.5.1)") from None


ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar", ".zip")


def _normalize(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def _cached(name: str, version: str) -> Path | None:
    """The cached archive whose file name is exactly <name>-<version>.<archive suffix>."""
    for path in sorted(sdist_dir().glob("*")):
        suffix = next((s for s in ARCHIVE_SUFFIXES if path.name.endswith(s)), None)
        if suffix is None:
            continue
        file_name, _, file_version = path.name[: -len(suffix)].rpartition("-")
        if _normalize(file_name) == _normalize(name) and file_version == version:
            return path
    return None


def fetch_sdist(name: str, version: str, sha256: str | None = None, *, sandbox: Sandbox) -> Path:
    """The sdist archive of name==version from the cache or PyPI; a wrong hash is an error, never a warning."""
    check_pin(name, version)
    path = _cached(name, version)
    if path is None:
        sdist_dir().mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=sdist_dir()) as tmp:
            folder = Path(tmp).resolve()
            # `--no-binary NAME`, not `:all:`: the source archive of this project only. With `:all:` pip also
            # builds the sdist's build backend (setuptools, ...) from source to prepare its metadata: 19 s a
            # project on 2 cores where the backend's wheel takes 6 s, and the same archive comes down.
            run_pip(sandbox, host_python(), ["download", "--quiet", "--no-deps", "--no-binary", name, "--dest",
                                             str(folder), f"{name}=={version}"], workdir=folder,
                    what=f"a download of the source distribution of {name}=={version}")
            files = [p for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink()]
            if len(files) != 1 or not files[0].name.endswith(ARCHIVE_SUFFIXES):
                raise SweTaskError(f"pip download of {name}=={version} left {[p.name for p in files][:5]}, not one "
                                   "source archive; check the name/version on PyPI")
            path = sdist_dir() / files[0].name
            shutil.move(str(files[0]), path)
    actual = sha256_file(path)
    if sha256 is not None and actual != sha256:
        raise SweTaskError(
            f"{path.name}: sha256 is {actual}, expected {sha256}. The file was corrupted or replaced; "
            f"delete {path} to download it again, or update the pinned hash if the release really changed."
        )
    return path


def extract_sdist(archive: Path, dest: Path) -> Path:
    """Unpack into dest and return the project's top directory (sdists hold exactly one)."""
    dest.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(ARCHIVE_SUFFIXES[:-1]):
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")  # refuses absolute paths, .. and device files
    elif archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                target = (dest / member).resolve()
                if dest.resolve() not in target.parents and target != dest.resolve():
                    raise SweTaskError(f"{archive.name}: member {member!r} would extract outside {dest}")
            zf.extractall(dest)
    else:
        raise SweTaskError(f"{archive.name}: unknown sdist format (expected .tar.gz or .zip)")
    tops = [p for p in dest.iterdir() if not p.name.startswith(".")]
    if len(tops) != 1 or not tops[0].is_dir():
        raise SweTaskError(f"{archive.name}: expected one top-level directory, found {[p.name for p in tops]}")
    return tops[0]
