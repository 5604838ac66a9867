"""`meta-agent lineage RUN --html OUT`: one self-contained page of a whole run, with every candidate, the
run's text shown as text, and links that stay inside the run directory."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.report.lineage_page import PAGE, write_run_page
from tests.report.lineage_run import HOSTILE, PLANS, lineage_run
from tests.review.small_run import RUN_ID

runner = CliRunner()


class _Links(HTMLParser):
    """Every src/href of a real element (text that merely looks like a tag does not count)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href")]


def _write(tmp_path: Path, out: Path | None = None) -> tuple[Path, str]:
    run_dir = lineage_run(tmp_path)
    out = out or tmp_path / "page" / "lineage.html"
    res = runner.invoke(app, ["lineage", str(run_dir), "--html", str(out)])
    assert res.exit_code == 0, res.output
    return run_dir, out.read_text()


def test_the_page_shows_every_candidate_with_its_verdict_delta_and_ci(tmp_path: Path) -> None:
    _run_dir, html = _write(tmp_path)
    for p in PLANS:
        assert f'data-cand="{RUN_ID}/{p.g}-{p.k}"' in html
    assert html.count('class="candidate merged"') == 2  # g0/c0 and g1/c1 sit on main's line
    assert "delta +0.120 [+0.070, +0.170] 2.4× the noise floor" in html
    assert "rejected</span> at replay" in html and "probe p1 rewarded more" in html
    assert "truncated: 42% truncated in gen 1 → cap the length, variant 2" in html  # the hypothesis


def test_the_page_compares_evolved_with_static_and_plots_each_generation(tmp_path: Path) -> None:
    _run_dir, html = _write(tmp_path)
    assert "0.610 [0.500, 0.700] (n=6)" in html and "0.450 [0.350, 0.550] (n=6)" in html
    assert "+0.160 [+0.040, +0.280] 3.2× the noise floor" in html
    plot = html.split('<svg id="score-plot"')[1].split("</svg>")[0]
    assert plot.count("<circle") == 2 and plot.count('class="ci"') == 2
    assert "gen 1: 0.520 [0.440, 0.600]" in plot


def test_a_hostile_title_is_shown_as_text_never_run(tmp_path: Path) -> None:
    _run_dir, html = _write(tmp_path)
    assert HOSTILE not in html
    assert "&lt;script&gt;document.body.setAttribute(&#39;data-pwned&#39;,&#39;1&#39;)&lt;/script&gt;" in html
    assert html.count("<script>") == 1  # the page's own


def test_the_page_needs_no_network_and_links_reports_relatively(tmp_path: Path) -> None:
    _run_dir, html = _write(tmp_path, tmp_path / "elsewhere" / "lineage.html")
    parser = _Links()
    parser.feed(html)
    links = parser.links
    assert not [u for u in links if re.match(r"(?i)(https?:)?//", u)], links
    assert "@import" not in html and "<link" not in html
    assert links == [f"../runs/{RUN_ID}/gen-001/main/report.html", f"../runs/{RUN_ID}/gen-001/cand-0/train/report.html"]
    for link in links:
        assert (tmp_path / "elsewhere" / link).resolve().is_file()


def test_the_page_written_at_the_end_of_evolve_sits_in_the_run_dir(tmp_path: Path) -> None:
    run_dir = lineage_run(tmp_path)
    warnings: list[str] = []
    assert write_run_page(run_dir, warnings.append) == (run_dir / PAGE).resolve()
    assert not warnings
    assert 'href="gen-001/main/report.html"' in (run_dir / PAGE).read_text()


def test_a_page_that_cannot_be_written_is_a_warning_not_a_failed_run(tmp_path: Path) -> None:
    run_dir = lineage_run(tmp_path)
    (run_dir / PAGE).mkdir()  # something in the way
    warnings: list[str] = []
    assert write_run_page(run_dir, warnings.append) is None
    assert len(warnings) == 1 and "not written" in warnings[0] and f"--html {run_dir / PAGE}" in warnings[0]


def test_a_directory_without_a_run_is_one_clear_error(tmp_path: Path) -> None:
    res = runner.invoke(app, ["lineage", str(tmp_path), "--html", str(tmp_path / "x.html")])
    assert res.exit_code == 1
    assert "holds no evolve run" in " ".join(res.output.split())  # rich wraps the line
