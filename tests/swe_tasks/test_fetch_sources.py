"""Set-up of a task set downloads its projects' sdists side by side, each as its source only.

A first `make demo` installs the shipped default set, whose six project repositories are made from their
sdists: one after another, each also building setuptools from source, that took two minutes on 2 cores.
The real download (through pip, in a sandbox, hash-checked) is exercised in test_build_from_pypi.py; here
the download is replaced by a recorder, to see what is asked for and when.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from meta_agent.swe import sdist, sources
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.sources import Source, fetch_sources


def test_sdists_download_side_by_side_and_git_sources_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    lock, running, most, fetched = threading.Lock(), [0], [0], []

    def recording_fetch(name: str, version: str, sha256: str | None = None, *, sandbox: object) -> Path:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
            fetched.append((name, version, sha256))
        return Path(f"/nowhere/{name}-{version}.tar.gz")

    monkeypatch.setattr(sources, "fetch_sdist", recording_fetch)
    wanted = [Source("pypi", "toolz==1.0.0", "a" * 64), Source("pypi", "tabulate==0.9.0"),
              Source("git", "/some/repo"), Source("pypi", "boltons==26.2.0", "b" * 64)]
    fetch_sources(wanted, sandbox=object())  # type: ignore[arg-type]
    assert sorted(fetched) == [("boltons", "26.2.0", "b" * 64), ("tabulate", "0.9.0", None),
                               ("toolz", "1.0.0", "a" * 64)]
    assert most[0] >= 2, "the downloads ran one after another"


def test_a_failed_download_fails_the_fetch(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_fetch(name: str, version: str, sha256: str | None = None, *, sandbox: object) -> Path:
        if name == "tabulate":
            raise SweTaskError("tabulate-0.9.0.tar.gz: sha256 is 1234, expected 0000")
        return Path(f"/nowhere/{name}-{version}.tar.gz")

    monkeypatch.setattr(sources, "fetch_sdist", failing_fetch)
    with pytest.raises(SweTaskError, match=r"tabulate-0\.9\.0\.tar\.gz: sha256"):
        fetch_sources([Source("pypi", "toolz==1.0.0"), Source("pypi", "tabulate==0.9.0")], sandbox=object())  # type: ignore[arg-type]


def test_an_unpinned_source_is_refused_before_anything_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "fetch_sdist", lambda *a, **k: pytest.fail("downloaded before the pins were read"))
    with pytest.raises(SweTaskError, match="pin an exact version"):
        fetch_sources([Source("pypi", "toolz==1.0.0"), Source("pypi", "tabulate")], sandbox=object())  # type: ignore[arg-type]


def test_pip_is_asked_for_the_projects_source_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--no-binary NAME`: with `:all:`, pip also built the sdist's build backend from source (19 s vs 6 s)."""
    monkeypatch.setenv("META_AGENT_CACHE", str(tmp_path))
    asked: list[list[str]] = []

    def pip(sandbox: object, python: Path, args: list[str], *, workdir: Path, what: str) -> None:
        asked.append(list(args))
        (workdir / "toolz-1.0.0.tar.gz").write_bytes(b"an archive")

    monkeypatch.setattr(sdist, "run_pip", pip)
    archive = sdist.fetch_sdist("toolz", "1.0.0", sandbox=object())  # type: ignore[arg-type]
    assert archive.read_bytes() == b"an archive"
    (args,) = asked
    assert args[args.index("--no-binary") + 1] == "toolz"
    assert ":all:" not in args and "--no-deps" in args and args[-1] == "toolz==1.0.0"
