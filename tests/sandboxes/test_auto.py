"""`auto` picks docker, then bwrap, says why, and never falls back to `process`."""

from __future__ import annotations

import itertools

import pytest

import sandboxes
from sandboxes import auto
from sandboxes.auto import Availability
from sandboxes.base import SandboxError


def _fake(monkeypatch: pytest.MonkeyPatch, docker_ok: bool, bwrap_ok: bool) -> None:
    monkeypatch.setattr(
        auto, "docker_availability", lambda: Availability("docker", docker_ok, "docker state", "start dockerd")
    )
    monkeypatch.setattr(
        auto, "bwrap_availability", lambda: Availability("bwrap", bwrap_ok, "bwrap state", "apt-get install bubblewrap")
    )


@pytest.mark.parametrize(("docker_ok", "bwrap_ok"), list(itertools.product([True, False], repeat=2)))
def test_auto_never_picks_process(monkeypatch: pytest.MonkeyPatch, docker_ok: bool, bwrap_ok: bool) -> None:
    _fake(monkeypatch, docker_ok, bwrap_ok)
    if not (docker_ok or bwrap_ok):
        with pytest.raises(SandboxError, match="never picked automatically") as err:
            auto.choose_backend()
        assert "apt-get install bubblewrap" in str(err.value) and "start dockerd" in str(err.value)
        return
    name, reason = auto.choose_backend()
    assert name == ("docker" if docker_ok else "bwrap")
    assert reason


def test_bwrap_is_chosen_with_the_reason_docker_was_not(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, docker_ok=False, bwrap_ok=True)
    name, reason = auto.choose_backend()
    assert name == "bwrap"
    assert "docker state" in reason


def test_get_backend_auto_says_what_it_picked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake(monkeypatch, docker_ok=False, bwrap_ok=True)
    sandboxes._announce.cache_clear()
    backend = sandboxes.get_backend("auto")
    assert backend.name == "bwrap" and backend.isolated
    sandboxes.get_backend("auto")  # a long run opens many sessions: the choice is said once
    assert capsys.readouterr().err.count("auto picked 'bwrap'") == 1



def test_an_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="bwrap, docker, process"):
        sandboxes.get_backend("chroot")


def test_the_real_probes_agree_with_this_machine() -> None:
    """On a machine with bwrap installed, the probe finds it usable (CI installs it)."""
    found = auto.bwrap_availability()
    assert found.usable, found
    assert "cgroups" in found.detail
