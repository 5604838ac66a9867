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
