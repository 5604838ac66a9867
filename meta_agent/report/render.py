"""Renders a RolloutReport to report.md and report.html (plots embedded) beside report.json."""

from __future__ import annotations

import base64
from pathlib import Path

import jinja2

from meta_agent.fsutil import atomic_write_text
from meta_agent.report.rollout_report import RolloutReport

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("meta_agent.report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "html.j2"]),  # the .j2 suffix hides .html from the default
    keep_trailing_newline=True,
)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


_ENV.globals.update(pct=_pct, num=_num)


def template(name: str) -> jinja2.Template:
    """A template of meta_agent/report/templates/."""
    return _ENV.get_template(name)


def render_markdown(report: RolloutReport) -> str:
    return _ENV.get_template("rollout_report.md.j2").render(r=report)


def render_html(report: RolloutReport) -> str:
    # matplotlib costs ~1 s to import: only a process that draws a report pays it, not every command
    from meta_agent.report.plots import curves_png, labels_png

    return _ENV.get_template("rollout_report.html.j2").render(
        r=report,
        curves_png=base64.b64encode(curves_png(report)).decode(),
        labels_png=base64.b64encode(labels_png(report)).decode(),
    )


def write_report(report: RolloutReport, out_dir: Path) -> dict[str, Path]:
    """report.json (the data), report.md and report.html; each written atomically."""
    paths = {"json": out_dir / "report.json", "md": out_dir / "report.md", "html": out_dir / "report.html"}
    atomic_write_text(paths["json"], report.model_dump_json(indent=2))
    atomic_write_text(paths["md"], render_markdown(report))
    atomic_write_text(paths["html"], render_html(report))
    return paths
