"""`meta-agent sandbox doctor` tells a user what works here and what to install."""

from __future__ import annotations

from typer.testing import CliRunner

from meta_agent.cli import app


def test_doctor_lists_every_backend_and_the_auto_choice() -> None:
    result = CliRunner().invoke(app, ["sandbox", "doctor"])
    assert result.exit_code == 0, result.output
    for name in ("docker", "bwrap", "process"):
        assert name in result.output
    assert "NO isolation" in result.output
    assert "auto  ->" in result.output


def test_build_image_reports_a_missing_engine_as_an_error(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = CliRunner().invoke(app, ["sandbox", "build-image"])
    assert result.exit_code == 1
    assert "no Docker engine answers at unix:///nonexistent/docker.sock" in result.output
