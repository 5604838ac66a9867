"""The lineage page in a real browser (Debian's headless Chromium): it loads from a file with no console
errors, its script runs and counts every candidate, and a hostile title's script does not run."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from meta_agent.report.lineage_page import write_lineage_html
from tests.report.lineage_run import PLANS, lineage_run


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("headless Chromium is missing: `scripts/system-deps.sh` (run by `make setup`) installs Debian's "
                "`chromium` package, or run `apt-get install chromium`")


def _load(page: Path, profile: Path) -> tuple[str, str]:
    """The DOM after the page's scripts ran, and the browser's log (console messages included)."""
    done = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


def test_the_page_loads_in_chromium_without_errors_and_shows_every_candidate(tmp_path: Path) -> None:
    page = write_lineage_html(lineage_run(tmp_path), tmp_path / "lineage.html")
    dom, log = _load(page, tmp_path / "profile")
    body = re.search(r"<body[^>]*>", dom)
    assert body is not None, dom[:2000]
    assert 'data-page="ready"' in body.group(), body.group()  # the page's script ran to its end
    assert f'data-candidates="{len(PLANS)}"' in body.group()
    assert "data-js-error" not in body.group()
    assert "data-pwned" not in body.group()  # the hostile title stayed text
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert not console, console


def _live(run_dir: Path, phase: str, **fields: object) -> None:
    from meta_agent.evolve.live import LiveWriter

    LiveWriter(run_dir, "evolve", 16).update(phase=phase, **fields)


def test_a_running_run_is_watched_live_in_chromium(tmp_path: Path) -> None:
    """`meta-agent watch` serves the page as the run is now: the running stage, its progress; a later load
    shows the next stage without anything rewriting a file."""
    import sys

    run_dir = lineage_run(tmp_path)
    _live(run_dir, "gen 1: candidate 2: replaying rollouts and probes", steps_done=5,  # this process: alive
          eta_seconds=1800, generation_eta_seconds=600)
    server = subprocess.Popen([sys.executable, "-m", "meta_agent", "watch", str(run_dir), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        url = re.search(r"http://127\.0\.0\.1:\d+/", server.stdout.readline())
        assert url, "watch did not print its address"
        dom, _log = _load_url(url.group(), tmp_path / "profile")
        now = re.search(r'<div id="now" class="now alive">(.*?)</div>', dom, re.S)
        assert now and "Running now" in now.group(1) and "candidate 2: replaying rollouts" in now.group(1), dom[:3000]
        assert "5 of about 16 GRPO steps, about 30 min to go (this generation: about 10 min)" in \
            " ".join(now.group(1).split())
        assert 'http-equiv="refresh"' in dom
        _live(run_dir, "gen 1: 1 training backtest(s) of 4 steps + selection eval (local)", detail="step 2/4")
        dom, _log = _load_url(url.group(), tmp_path / "profile")
        assert "training backtest(s) of 4 steps" in dom and "step 2/4" in dom
    finally:
        server.kill()


def test_a_stopped_run_says_how_to_continue_on_its_page(tmp_path: Path) -> None:
    run_dir = lineage_run(tmp_path)
    _live(run_dir, "gen 1: diagnosing (skills proposer)", ended="interrupted (Ctrl-C)")
    dom, _log = _load(write_lineage_html(run_dir, tmp_path / "lineage.html"), tmp_path / "profile")
    now = re.search(r'<div id="now" class="now stopped">(.*?)</div>', dom, re.S)
    assert now and "interrupted (Ctrl-C)" in now.group(1) and f"meta-agent resume {run_dir}" in now.group(1)


def _load_url(url: str, profile: Path) -> tuple[str, str]:
    done = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr
