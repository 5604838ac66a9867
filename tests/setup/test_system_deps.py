"""`scripts/system-deps.sh` (run by `make setup`): a fresh machine gets what the sandboxes need, or one
clear message naming what to install; a second run does nothing."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "system-deps.sh"
COMMANDS = ("bwrap", "dockerd", "debootstrap", "chromium")


def _path_without_sandbox_tools(tmp_path: Path, keep_apt: bool = True) -> str:
    """A PATH holding every command of this machine except those the script provisions (and apt-get)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            link = bin_dir / name
            if name in COMMANDS or (not keep_apt and name == "apt-get") or link.exists():
                continue
            link.symlink_to(Path(directory) / name)
    return str(bin_dir)


def _run(path: str, *, user: int | None = None, env: dict[str, str] | None = None, tmp: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    script = SCRIPT
    if tmp is not None:  # the unprivileged user must be able to read the script wherever the clone is
        script = tmp / "system-deps.sh"
        shutil.copy(SCRIPT, script)
        script.chmod(0o755)
    cmd = ["bash", str(script)]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    full_env = {"PATH": path, "META_AGENT_SYSTEM_DEPS_PATH": path, "LANG": "C.UTF-8", **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=600)


@pytest.fixture
def root_only() -> None:
    if os.geteuid() != 0:
        pytest.fail("these tests provision system packages and need root (CI and `make test` run as root)")


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A directory an unprivileged user can traverse (pytest's own tmp dirs are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="meta-agent-setup-test-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_second_run_does_nothing_and_says_so(root_only: None) -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    again = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0
    assert "nothing to do" in again.stdout


def test_without_root_it_names_what_to_install_and_installs_nothing(root_only: None, public_tmp: Path) -> None:
    path = _path_without_sandbox_tools(public_tmp)
    result = _run(path, user=65534, tmp=public_tmp)
    assert result.returncode == 1
    for package in ("bubblewrap", "docker.io", "debootstrap", "chromium"):
        assert package in result.stderr
    assert "not root" in result.stderr
    assert "sudo apt-get install -y bubblewrap docker.io debootstrap chromium" in result.stderr
    assert "installing" not in result.stdout


def test_bwrap_alone_can_be_asked_for(root_only: None, public_tmp: Path) -> None:
    path = _path_without_sandbox_tools(public_tmp)
    result = _run(path, user=65534, env={"META_AGENT_SYSTEM_DEPS": "bwrap"}, tmp=public_tmp)
    assert result.returncode == 1
    assert "bubblewrap" in result.stderr and "docker.io" not in result.stderr and "chromium" not in result.stderr


def test_without_apt_get_it_says_so(root_only: None, tmp_path: Path) -> None:
    result = _run(_path_without_sandbox_tools(tmp_path, keep_apt=False))
    assert result.returncode == 1
    assert "no apt-get on this system" in result.stderr
    assert "bubblewrap" in result.stderr


@pytest.fixture
def apt_lock_held() -> Iterator[None]:
    """Another package manager holds apt's locks (apt-get takes the same fcntl locks)."""
    held = []
    for lock in ("/var/lib/apt/lists/lock", "/var/lib/dpkg/lock-frontend"):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o640)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(fd)
    try:
        yield
    finally:
        for fd in held:
            fcntl.lockf(fd, fcntl.LOCK_UN)
            os.close(fd)


def test_a_failing_apt_get_shows_its_error_and_fails(root_only: None, apt_lock_held: None, tmp_path: Path) -> None:
    result = _run(_path_without_sandbox_tools(tmp_path))
    assert result.returncode == 1
    assert "Could not get lock" in result.stderr  # apt-get's own words reach the user
    assert "not installed" in result.stderr or "failed" in result.stderr


@pytest.mark.slow
def test_missing_packages_are_installed_with_the_real_apt_get(root_only: None, tmp_path: Path) -> None:
    """The packages are already on this machine, so apt-get has nothing to fetch; what is exercised is the
    path a fresh machine takes: detection, `apt-get update`, `apt-get install`, and the dpkg check after."""
    result = _run(_path_without_sandbox_tools(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "installing bubblewrap docker.io debootstrap chromium" in result.stdout
    assert "installed bubblewrap docker.io debootstrap chromium" in result.stdout
