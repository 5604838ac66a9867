"""A session's disk quota: whatever its commands write past it is stopped, reported and deleted.

Each attack runs against every isolating backend (`bwrap`, `docker`) with a 50 MiB quota; the
quota covers the workdir, the writable mounts, the scratch dir and the in-memory /tmp.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxes import disk_quota
from sandboxes.base import Mount, RunResult, Sandbox, Session
from tests.sandboxes.conftest import TEST_LIMITS
from tests.sandboxes.sandbox_test_helpers import assert_still_works

PY = sys.executable
QUOTA = dataclasses.replace(TEST_LIMITS, disk_mb=50)
TWO_GB = "dd if=/dev/zero of={path} bs=1M count=2048"
# Many 8 MiB files, 2 GiB in all: no single file reaches the file-size limit, only the watchdog stops it.
MANY_FILES = ("import os\nos.makedirs({dir!r}, exist_ok=True)\n"
              "for i in range(256):\n    open(os.path.join({dir!r}, f'part-{{i}}'), 'wb').write(bytes(8 << 20))\n"
              "print('finished')\n")


@pytest.fixture
def out_dir(area: Path) -> Path:
    """A writable mount next to the workdir, as a harness's output directory."""
    path = area / "out"
    path.mkdir()
    return path


@pytest.fixture
def quota_session(backend: Sandbox, workdir: Path, out_dir: Path) -> Iterator[Session]:
    with backend.open(workdir, mounts=[Mount(out_dir, read_only=False)], limits=QUOTA) as opened:
        yield opened


def _bytes_under(path: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def _grew_by_mib(result: RunResult) -> float:
    found = re.search(r"grew by ([0-9.]+) MiB", result.disk_quota_detail)
    assert found, result.disk_quota_detail
    return float(found.group(1))


def _assert_stopped_for_the_quota(result: RunResult, where: str) -> None:
    assert result.disk_quota_exceeded and not result.ok, result
    assert where in result.disk_quota_detail, result.disk_quota_detail
    assert "50 MiB" in result.disk_quota_detail and "deleted" in result.disk_quota_detail
    assert result.describe_failure().startswith("went over its disk quota")
    assert result.wall_time < 10, "the command was not stopped soon after it reached the quota"


def test_a_2gb_file_written_into_the_workdir_is_stopped_reported_and_deleted(quota_session: Session) -> None:
    workdir = quota_session.workdir
    result = quota_session.run(["sh", "-c", TWO_GB.format(path="big")])
    _assert_stopped_for_the_quota(result, str(workdir))
    assert not (workdir / "big").exists()
    assert (workdir / "README").read_text() == "a candidate checkout\n"  # what was there before stays
    assert_still_works(quota_session)


def test_many_files_past_the_quota_are_stopped_by_the_watchdog_and_deleted(quota_session: Session,
                                                                          out_dir: Path) -> None:
    result = quota_session.run([PY, "-c", MANY_FILES.format(dir=str(out_dir / "checkpoint"))])
    _assert_stopped_for_the_quota(result, str(out_dir))
    assert "finished" not in result.stdout
    assert _grew_by_mib(result) < 1024, "stopped only long after the quota"
    assert _bytes_under(out_dir) == 0 and not (out_dir / "checkpoint").exists()
    assert_still_works(quota_session)


def test_a_2gb_file_written_into_scratch_is_stopped_reported_and_deleted(quota_session: Session) -> None:
    result = quota_session.run(["sh", "-c", TWO_GB.format(path='"$HOME/big"')])
    _assert_stopped_for_the_quota(result, str(quota_session.scratch))
    left = quota_session.run(["sh", "-c", 'ls -A "$HOME"; du -sk "$HOME"'])
    assert "big" not in left.stdout and int(left.stdout.split()[-2]) < 1024, left.stdout
    assert_still_works(quota_session)


def test_filling_the_in_memory_tmp_is_reported_and_emptied(quota_session: Session) -> None:
    assert quota_session.run(["sh", "-c", "echo kept > /tmp/earlier"]).ok
    result = quota_session.run(["sh", "-c", TWO_GB.format(path="/tmp/big")])
    _assert_stopped_for_the_quota(result, "/tmp")
    assert "filled up" in result.disk_quota_detail
    left = quota_session.run(["ls", "-A", "/tmp"]).stdout.split()
    assert "earlier" in left and "big" not in left, left  # only what this run wrote is gone
    assert_still_works(quota_session)


def test_the_quota_counts_the_whole_session_and_deletes_only_the_run_that_broke_it(quota_session: Session,
                                                                                  out_dir: Path) -> None:
    first = quota_session.run(["sh", "-c", f"dd if=/dev/zero of={out_dir}/first bs=1M count=30"])
    assert first.ok and not first.disk_quota_exceeded, first.describe_failure()
    second = quota_session.run(["sh", "-c", "dd if=/dev/zero of=second bs=1M count=30"])
    _assert_stopped_for_the_quota(second, str(quota_session.workdir))
    assert (out_dir / "first").stat().st_size == 30 << 20  # the earlier run's output, within the quota, stays
    assert not (quota_session.workdir / "second").exists()


def test_files_that_were_there_before_the_session_do_not_count(backend: Sandbox, workdir: Path) -> None:
    (workdir / "model.bin").write_bytes(bytes(80 << 20))
    with backend.open(workdir, limits=QUOTA) as session:
        result = session.run(["sh", "-c", "dd if=/dev/zero of=more bs=1M count=20"])
    assert result.ok and not result.disk_quota_exceeded, result.describe_failure()
    assert (workdir / "more").stat().st_size == 20 << 20


def test_no_file_can_be_bigger_than_the_quota_not_even_a_sparse_one(quota_session: Session) -> None:
    result = quota_session.run(["truncate", "-s", "10G", "sparse"])
    assert not result.ok, result  # stopped by the file-size limit (SIGXFSZ), though it would take no disk
    assert (quota_session.workdir / "sparse").stat().st_size == 0


def test_a_flood_of_empty_files_counts_against_the_quota(backend: Sandbox, workdir: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disk_quota, "MAX_NEW_ENTRIES", 2000)  # each costs an inode and a stat, however empty
    with backend.open(workdir, limits=QUOTA) as session:
        result = session.run([PY, "-c", "import os\nos.mkdir('d')\nfor i in range(100_000): open(f'd/{i}', 'w')"])
        assert result.disk_quota_exceeded and not result.ok, result
        assert "more than" in result.disk_quota_detail and "files and directories" in result.disk_quota_detail
        assert result.wall_time < 10
        assert not (workdir / "d").exists()
        assert_still_works(session)


def test_deleting_what_went_over_never_follows_a_link_out_of_the_session(quota_session: Session,
                                                                         area: Path) -> None:
    outside = area / "outside"
    outside.mkdir()
    (outside / "host-file").write_text("not the sandbox's")
    script = (f"ln -s {outside} linked-dir && ln -s {outside}/host-file linked-file && "
              "mkdir hidden && dd if=/dev/zero of=hidden/part bs=1M count=40 && chmod 000 hidden && "
              "dd if=/dev/zero of=more bs=1M count=30")
    result = quota_session.run(["sh", "-c", script])
    _assert_stopped_for_the_quota(result, str(quota_session.workdir))
    assert (outside / "host-file").read_text() == "not the sandbox's"
    assert sorted(p.name for p in quota_session.workdir.iterdir()) == ["README"]  # links and the hidden dir too
