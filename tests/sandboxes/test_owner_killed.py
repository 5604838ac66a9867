"""Killing the process that owns a session (even with SIGKILL) leaves nothing running behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from sandboxes.base import Sandbox
from tests.sandboxes.sandbox_test_helpers import host_processes_with, wait_until

OWNER = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path
    from sandboxes import BACKENDS

    backend, image, workdir = sys.argv[1:]
    marker = os.environ["ORPHAN_MARKER"]  # not in our own argv: only the sandboxed command carries it
    sandbox = BACKENDS.get(backend)(image=image) if backend == "docker" else BACKENDS.get(backend)()
    session = sandbox.open(Path(workdir))
    print("opened", flush=True)
    session.run([sys.executable, "-c", "import time; time.sleep(600)", marker])
    """
)


def _containers_of(owner_pid: int) -> list[str]:
    from sandboxes.docker import LABEL
    from sandboxes.engine import docker_client

    client = docker_client()
    try:
        found = client.containers.list(all=True, filters={"label": f"{LABEL}.owner-pid={owner_pid}"})
        return [c.id for c in found]
    finally:
        client.close()


def test_sigkill_of_the_owner_ends_the_sandbox(backend: Sandbox, workdir: Path) -> None:
    marker = f"orphan-check-{uuid.uuid4().hex}"
    image = getattr(backend, "image", None) or ""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, backend.name, image, str(workdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "ORPHAN_MARKER": marker},
    )
    try:
        assert wait_until(lambda: host_processes_with(marker), timeout=60), owner.stderr
    except AssertionError:
        owner.kill()
        pytest.fail(f"the owner never started its command: {owner.communicate()[1].decode()[-2000:]}")
    from sandboxes.bwrap import SESSION_DIR_PREFIX

    # taken while the owner lives (no session sweeps a live owner's dir): after the kill, a session another
    # test opens in the meantime may already have swept it
    sessions = list(Path(tempfile.gettempdir()).glob(f"{SESSION_DIR_PREFIX}{owner.pid}-*"))
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert wait_until(lambda: not host_processes_with(marker), timeout=30), "sandboxed process outlived its owner"
    if backend.name == "docker":
        assert wait_until(lambda: not _containers_of(owner.pid), timeout=30), "container outlived its owner"
    else:
        assert sessions, "expected the owner's session dir (which its kill keeps it from cleaning up)"
        backend.open(workdir).close()  # the next session sweeps it
        assert not [p for p in sessions if p.exists()]
