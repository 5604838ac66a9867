"""What a harness command can rely on inside a session, on every isolating backend."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sandboxes.base import MEMORY_ENV, Mount, Sandbox, Session
from tests.sandboxes.sandbox_test_helpers import LoopbackServer

PY = sys.executable


def test_the_callers_python_and_venv_work_inside(session: Session) -> None:
    result = session.run([PY, "-c", "import sys, docker; print(sys.prefix)"])
    assert result.ok, result.describe_failure()
    assert result.stdout.strip() == sys.prefix


def test_commands_start_in_the_workdir_and_their_files_land_on_the_host(session: Session) -> None:
    result = session.run(["sh", "-c", "pwd; cat README; echo made > made.txt"])
    assert result.ok, result.describe_failure()
    assert result.stdout == f"{session.workdir}\na candidate checkout\n"
    assert (session.workdir / "made.txt").read_text() == "made\n"


def test_cwd_can_be_a_subdirectory(session: Session) -> None:
    (session.workdir / "sub").mkdir()
    result = session.run(["pwd"], cwd=session.workdir / "sub")
    assert result.stdout.strip() == str(session.workdir / "sub")


def test_the_environment_is_clean_and_home_is_the_scratch_dir(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("META_AGENT_HOST_ONLY", "leak")
    result = session.run(["env"], env={"GIVEN": "yes"})
    assert result.ok
    assert "META_AGENT_HOST_ONLY" not in result.stdout
    assert "GIVEN=yes" in result.stdout
    assert f"HOME={session.scratch}" in result.stdout


def test_a_command_is_told_its_memory_cap_whatever_the_caller_passes(session: Session) -> None:
    # a cgroup's limit is invisible inside bubblewrap: a job sizing a cache to memory reads it here
    result = session.run(["env"], env={MEMORY_ENV: "999999"})
    assert result.ok
    assert f"{MEMORY_ENV}={session.limits.memory_mb}" in result.stdout.splitlines()


def test_scratch_keeps_files_between_runs_of_a_session(session: Session) -> None:
    assert session.run(["sh", "-c", 'echo kept > "$HOME/note"']).ok
    result = session.run(["sh", "-c", 'cat "$HOME/note"'])
    assert result.stdout == "kept\n"


def test_exit_codes_and_stderr_come_back(session: Session) -> None:
    result = session.run(["sh", "-c", "echo out; echo err >&2; exit 7"])
    assert (result.exit_code, result.stdout, result.stderr) == (7, "out\n", "err\n")
    assert not result.ok
    assert "exited with code 7" in result.describe_failure()


def test_a_missing_program_is_a_failed_run_not_a_crash(session: Session) -> None:
    result = session.run(["no-such-program-anywhere"])
    assert result.exit_code in (126, 127)
    assert "no-such-program-anywhere" in result.stdout + result.stderr
    assert session.run(["true"]).ok


def test_background_processes_do_not_outlive_their_run(session: Session) -> None:
    assert session.run(["sh", "-c", "sleep 300 & echo started"]).stdout == "started\n"
    result = session.run(["sh", "-c", "ps -eo args"])
    assert "sleep 300" not in result.stdout


def test_git_works_in_the_workdir(session: Session) -> None:
    result = session.run(["sh", "-c", "git init -q . && git -c user.name=t -c user.email=t@t status --short"])
    assert result.ok, result.describe_failure()
    assert "README" in result.stdout


def test_mounts_are_read_only_unless_asked(backend: Sandbox, workdir: Path, area: Path) -> None:
    data, out = area / "data", area / "out"
    data.mkdir()
    out.mkdir()
    (data / "input.txt").write_text("input")
    with backend.open(workdir, mounts=[Mount(data), Mount(out, read_only=False)]) as session:
        result = session.run(["sh", "-c", f"cat {data}/input.txt; echo x > {data}/new; echo y > {out}/result"])
    assert result.stdout.startswith("input")
    assert "Read-only file system" in result.stderr
    assert not (data / "new").exists()
    assert (out / "result").read_text() == "y\n"


def test_a_closed_session_refuses_to_run(backend: Sandbox, workdir: Path) -> None:
    session = backend.open(workdir)
    session.close()
    session.close()  # idempotent
    with pytest.raises(Exception, match="closed"):
        session.run(["true"])


def test_commands_inherit_nothing_but_stdio(session: Session) -> None:
    """In particular not the channel to the sandbox's PID 1, which could forge results."""
    result = session.run(["ls", "/proc/self/fd"])
    assert result.stdout.split() == ["0", "1", "2", "3"]  # 3: the directory ls is listing


def test_bwrap_gets_the_host_network_only_when_asked(workdir: Path, loopback_server: LoopbackServer) -> None:
    from sandboxes.bwrap import BwrapSandbox

    script = f"import socket; print(socket.create_connection(('127.0.0.1', {loopback_server.port}), 5).recv(100))"
    with BwrapSandbox().open(workdir, network=True) as session:
        result = session.run([PY, "-c", script])
    assert result.ok, result.describe_failure()
    assert loopback_server.token in result.stdout
