"""The `process` backend isolates nothing, so it says so every time it is used; it still keeps the disk quota."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxes import Limits, get_backend


def test_process_backend_warns_loudly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = get_backend("process")
    assert backend.isolated is False
    with backend.open(tmp_path) as session:
        assert session.run(["echo", "hi"]).stdout == "hi\n"
    assert "NO isolation" in capsys.readouterr().err


def test_the_process_backend_holds_its_workdir_to_the_disk_quota(tmp_path: Path) -> None:
    with get_backend("process").open(tmp_path, limits=Limits(disk_mb=50)) as session:
        result = session.run(["sh", "-c", "dd if=/dev/zero of=big bs=1M count=2048"])
    assert result.disk_quota_exceeded and not result.ok, result
    assert str(tmp_path) in result.disk_quota_detail and "50 MiB disk quota" in result.disk_quota_detail
    assert not (tmp_path / "big").exists()
