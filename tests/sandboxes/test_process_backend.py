"""The `process` backend isolates nothing, so it says so every time it is used."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxes import get_backend


def test_process_backend_warns_loudly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = get_backend("process")
    assert backend.isolated is False
    with backend.open(tmp_path) as session:
        assert session.run(["echo", "hi"]).stdout == "hi\n"
    assert "NO isolation" in capsys.readouterr().err
