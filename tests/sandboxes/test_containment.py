"""Each attack an evolved harness could make is contained, reported, and survivable.

Run against every isolating backend (`bwrap`, `docker`); each test ends by checking that
the same session still runs commands.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from dataclasses import replace
from pathlib import Path

from sandboxes.base import Sandbox, Session
from tests.sandboxes.conftest import TEST_LIMITS
from tests.sandboxes.sandbox_test_helpers import LoopbackServer, assert_still_works, host_processes_with

PY = sys.executable


def test_writes_outside_the_workdir_fail_and_never_reach_the_host(session: Session, area: Path) -> None:
    tag = uuid.uuid4().hex
    targets = [
        area / f"sibling-{tag}",  # next to the workdir
        Path.home() / f".escape-{tag}",
        Path("/usr/local") / f"escape-{tag}",
        Path("/etc") / f"escape-{tag}",
        Path(f"/escape-{tag}"),
    ]
    script = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path, 'w').write('escaped')\n"
        "        print('WROTE', path)\n"
        "    except OSError as err:\n"
        "        print('REFUSED', path, err.strerror)\n"
        "open('inside.txt', 'w').write('inside')\n"
    )
    try:
        result = session.run([PY, "-c", script, *map(str, targets)])
        assert result.ok, result.describe_failure()
        assert "WROTE" not in result.stdout
        assert result.stdout.count("REFUSED") == len(targets)  # the command saw each write fail
        assert not [t for t in targets if t.exists()]
        assert (session.workdir / "inside.txt").read_text() == "inside"  # the workdir itself is writable
    finally:
        for target in targets:
            target.unlink(missing_ok=True)
    assert_still_works(session)


def test_tmp_is_private_to_the_sandbox(session: Session) -> None:
    name = f"/tmp/meta-agent-private-{uuid.uuid4().hex}"
    result = session.run([PY, "-c", f"open({name!r}, 'w').write('x'); print(open({name!r}).read())"])
    assert result.ok and result.stdout == "x\n", result
    assert not Path(name).exists()
    assert_still_works(session)


def test_a_planted_host_secret_cannot_be_read(session: Session, area: Path) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    planted = [area / "secret.txt", Path.home() / f".meta-agent-test-secret-{uuid.uuid4().hex}"]
    for path in planted:
        path.write_text(secret)
    try:
        result = session.run(["cat", *map(str, planted)])
        assert result.exit_code != 0
        assert secret not in result.stdout + result.stderr
        assert "No such file" in result.stderr  # reported: the command saw the files as absent
    finally:
        for path in planted:
            path.unlink(missing_ok=True)
    assert_still_works(session)


def test_a_symlink_in_the_repo_pointing_outside_leads_nowhere(session: Session, area: Path) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    (area / "secret.txt").write_text(secret)
    in_home = Path.home() / f".meta-agent-test-secret-{uuid.uuid4().hex}"
    in_home.write_text(secret)
    (session.workdir / "absolute-link").symlink_to(area / "secret.txt")
    (session.workdir / "relative-link").symlink_to("../secret.txt")
    (session.workdir / "home-link").symlink_to(Path.home())
    try:
        result = session.run(["cat", "absolute-link", "relative-link", f"home-link/{in_home.name}"])
    finally:
        in_home.unlink()
    assert result.exit_code != 0
    assert secret not in result.stdout + result.stderr
    assert result.stderr.count("No such file") == 3
    assert_still_works(session)


def test_a_tcp_server_on_host_loopback_is_unreachable(session: Session, loopback_server: LoopbackServer) -> None:
    with socket.create_connection(("127.0.0.1", loopback_server.port), timeout=5) as probe:
        assert probe.recv(100).decode() == loopback_server.token  # the server does answer the host
    seen_from_host = len(loopback_server.accepted)
    script = (
        "import socket, sys\n"
        "try:\n"
        "    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)\n"
        "    print('CONNECTED', s.recv(100).decode())\n"
        "except OSError as err:\n"
        "    print('REFUSED', err)\n"
        "    sys.exit(3)\n"
    )
    result = session.run([PY, "-c", script, str(loopback_server.port)])
    assert result.exit_code == 3, result
    assert "REFUSED" in result.stdout
    assert loopback_server.token not in result.stdout
    assert len(loopback_server.accepted) == seen_from_host
    assert_still_works(session)


def test_a_fork_bomb_stops_at_the_pids_limit(session: Session) -> None:
    marker = f"forkbomb-{uuid.uuid4().hex}"
    counting = (
        "import os, sys, time\n"
        "children = 0\n"
        "while True:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        print('refused after', children)\n"
        "        sys.exit(0)\n"
        "    if pid == 0:\n"
        "        time.sleep(300)\n"
        "        os._exit(0)\n"
        "    children += 1\n"
    )
    result = session.run([PY, "-c", counting, marker], timeout=60)
    assert result.ok, result.describe_failure()
    children = int(result.stdout.split()[-1])
    assert 0 < children < 64  # TEST_LIMITS.pids
    assert host_processes_with(marker) == []  # the sleeping children went with the run
    # The classic version never stops by itself: it runs into the wall-time limit.
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    result = session.run([PY, "-c", bomb, marker], timeout=5)
    assert result.timed_out and not result.ok
    assert host_processes_with(marker) == []
    assert_still_works(session)


def test_allocating_past_the_memory_limit_is_reported_as_oom(session: Session) -> None:
    result = session.run([PY, "-c", "blob = b'x' * (1024 ** 3)"])  # 1 GiB against a 256 MiB limit
    assert result.oom_killed and not result.ok
    assert "out of memory" in result.describe_failure()
    assert_still_works(session)


def test_a_command_that_times_out_at_its_memory_limit_is_reported_as_out_of_memory(
    backend: Sandbox, workdir: Path
) -> None:
    # A process at its cgroup's limit is slowed by the kernel reclaiming for it, and on a busy machine its timeout
    # can come before the OOM killer: a user told only "timed out" looks for a slow loop. Here the command holds
    # ~94% of its limit and waits, so the kill finds it there.
    holding = "import time\nblob = b'x' * (480 * 1024 * 1024)\nprint('holding', flush=True)\ntime.sleep(300)\n"
    with backend.open(workdir, limits=replace(TEST_LIMITS, memory_mb=512)) as session:
        result = session.run([PY, "-c", holding], timeout=20)
        assert result.stdout.strip() == "holding", result.describe_failure()
        assert result.timed_out and result.stalled_out_of_memory and not result.ok
        assert result.held_at_kill_mb is not None and 460 < result.held_at_kill_mb <= 512
        reason = result.describe_failure()
        assert "out of memory" in reason and "timed out" in reason and "512 MB" in reason, reason
        # A slow command far below its limit is only slow.
        result = session.run([PY, "-c", "import time\ntime.sleep(300)"], timeout=2)
        reason = result.describe_failure()
        assert result.timed_out and not result.stalled_out_of_memory, reason
        assert "timed out" in reason and "out of memory" not in reason, reason
        assert_still_works(session)


def test_an_infinite_loop_times_out_and_leaves_no_process(session: Session) -> None:
    marker = f"loop-{uuid.uuid4().hex}"
    script = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'while True: pass', sys.argv[1]], start_new_session=True)\n"
        "while True:\n"
        "    pass\n"
    )
    result = session.run([PY, "-c", script, marker], timeout=2)
    assert result.timed_out and not result.ok
    assert "timed out" in result.describe_failure()
    assert host_processes_with(marker) == []  # including the child that escaped into its own session
    assert_still_works(session)


def test_100mb_of_output_is_capped_with_a_marker(session: Session) -> None:
    script = "import sys\nsys.stdout.buffer.write(b'x' * 100_000_000)\nsys.stderr.write('e' * 100_000)\n"
    result = session.run([PY, "-c", script])
    assert result.ok, result.describe_failure()
    assert result.output_truncated
    assert result.stdout.startswith("x" * 64_000)  # TEST_LIMITS.output_bytes kept...
    assert "output cut by sandbox: 99936000 bytes dropped" in result.stdout  # ...and the rest counted
    assert len(result.stdout) < 64_100
    assert "36000 bytes dropped" in result.stderr
    assert_still_works(session)


def test_commands_hold_no_capabilities_and_see_no_host_credentials(session: Session) -> None:
    result = session.run(["sh", "-c", "grep -E '^Cap(Eff|Prm):' /proc/self/status; cat /etc/shadow"])
    assert "CapEff:\t0000000000000000" in result.stdout
    assert "CapPrm:\t0000000000000000" in result.stdout
    host_shadow = Path("/etc/shadow")
    if host_shadow.exists() and os.access(host_shadow, os.R_OK):
        assert host_shadow.read_text().strip() not in result.stdout  # bwrap: absent; docker: the image's own
    assert_still_works(session)
