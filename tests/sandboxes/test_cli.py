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


def test_doctor_prints_the_exact_command_that_starts_a_docker_engine(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """docker.io installed but no engine up (a fresh machine after `make setup`): doctor says how to start one,
    and `auto` still picks bwrap, saying why."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = CliRunner().invoke(app, ["sandbox", "doctor"])
    assert result.exit_code == 0, result.output
    assert "dockerd --iptables=false --bridge=none" in result.output
    assert "export DOCKER_HOST=unix://" in result.output
    assert "meta-agent sandbox build-image" in result.output
    assert "auto  -> bwrap (docker is not usable" in result.output


def test_doctor_says_which_uid_sandboxed_code_runs_as_and_refuses_root(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    result = CliRunner().invoke(app, ["sandbox", "doctor"])
    assert "sandboxed code runs as uid" in result.output
    if os.geteuid() == 0:
        assert "uid 0," not in result.output
        monkeypatch.setenv("META_AGENT_SANDBOX_UID", "0")
        refused = CliRunner().invoke(app, ["sandbox", "doctor"])
        assert "REFUSED" in refused.output and "host root" in refused.output
