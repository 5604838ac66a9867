"""bwrap's limits: per-session cgroups where writable, RLIMIT_AS (memory only) where not."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sandboxes.base import Limits
from sandboxes.bwrap import BwrapSandbox
from sandboxes.cgroups import PREFIX, CgroupUnavailable, create_session_cgroup


def _cgroup_or_skip(limits: Limits):  # type: ignore[no-untyped-def]
    try:
        return create_session_cgroup(limits)
    except CgroupUnavailable as err:
        pytest.skip(f"no writable cgroups here: {err}")


def test_a_session_cgroup_carries_the_limits_and_is_removed_on_close(workdir: Path) -> None:
    _cgroup_or_skip(Limits()).remove()
    limits = Limits(memory_mb=200, pids=40, cpus=0.5)
    with BwrapSandbox().open(workdir, limits=limits) as session:
        cgroup = session.cgroup
        assert cgroup is not None and session.limit_mode.startswith("cgroup")
        if cgroup.version == "v1":
            dirs = cgroup.dirs  # type: ignore[attr-defined]
            assert int((dirs["memory"] / "memory.limit_in_bytes").read_text()) == 200 * 1024 * 1024
            assert (dirs["pids"] / "pids.max").read_text().strip() == "40"
            assert (dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        paths = [f.parent for f in cgroup.procs_files]
        assert all(p.exists() for p in paths)
    assert not any(p.exists() for p in paths)


def test_cgroups_left_by_a_dead_owner_are_swept(workdir: Path) -> None:
    probe = _cgroup_or_skip(Limits())
    probe.remove()
    dead_pid = 2**22 + 1  # above pid_max on common configurations: never alive
    stale = [f.parent.parent / f"{PREFIX}{dead_pid}-deadbeef" for f in probe.procs_files]
    for path in stale:
        path.mkdir()
    create_session_cgroup(Limits()).remove()
    assert not any(p.exists() for p in stale)


def test_without_cgroups_memory_is_still_limited_and_reported(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BwrapSandbox(use_cgroups=False).open(workdir, limits=Limits(memory_mb=512)) as session:
        assert session.limit_mode.startswith("rlimits")
        result = session.run([sys.executable, "-c", "blob = b'x' * (1024 ** 3)"])
        assert result.oom_killed and not result.ok
        assert session.run(["true"]).ok


def test_the_sandbox_runs_inside_its_session_cgroup(workdir: Path) -> None:
    _cgroup_or_skip(Limits()).remove()
    with BwrapSandbox().open(workdir) as session:
        assert session.cgroup is not None
        result = session.run(["sleep", "0.5"], timeout=30)
        assert result.ok
        # Between runs only the sandbox's PID 1 is left in the cgroup.
        assert len(session.cgroup.pids()) == 1
        assert os.getpid() not in session.cgroup.pids()
