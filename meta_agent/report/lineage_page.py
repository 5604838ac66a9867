"""`meta-agent lineage RUN --html OUT`: one self-contained HTML page of a whole evolve run (candidate tree,
main's selection score per generation as an inline SVG, evolved vs static), also written as
RUN/lineage.html when evolve ends. No network: inline CSS, JS and SVG only; all run text is escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from meta_agent.fsutil import atomic_write_text
from meta_agent.report.lineage_view import GenerationNode, LineageView, collect_lineage
from meta_agent.report.render import template

PAGE = "lineage.html"
WIDTH, HEIGHT, MARGIN = 560, 200, 40


@dataclass(frozen=True)
class PlotPoint:
    gen: int
    x: float
    y: float
    y_low: float
    y_high: float
    label: str


@dataclass(frozen=True)
class ScorePlot:
    """Pixel geometry of the score plot; the template draws it (numbers only, nothing from the run)."""

    points: list[PlotPoint]
    y_ticks: list[tuple[float, str]]
    width: int = WIDTH
    height: int = HEIGHT
    margin: int = MARGIN

    @property
    def path(self) -> str:
        return " ".join(f"{'M' if i == 0 else 'L'}{p.x:.1f},{p.y:.1f}" for i, p in enumerate(self.points))


def score_plot(generations: list[GenerationNode]) -> ScorePlot:
    """Main's selection score with its 95% CI per finished generation, scaled into the plot area."""
    done = [g for g in generations if g.score is not None and g.low is not None and g.high is not None]
    if not done:
        return ScorePlot(points=[], y_ticks=[])
    lo = min(min(g.low for g in done if g.low is not None), 0.0)
    hi = max(max(g.high for g in done if g.high is not None), lo + 0.2)  # flat scores still get a readable axis
    inner_w, inner_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def y(v: float) -> float:
        return MARGIN + inner_h * (1 - (v - lo) / (hi - lo))

    step = inner_w / max(len(done) - 1, 1)
    points = [PlotPoint(gen=g.gen, x=MARGIN + (i * step if len(done) > 1 else inner_w / 2), y=y(g.score or 0.0),
                        y_low=y(g.low or 0.0), y_high=y(g.high or 0.0),
                        label=f"gen {g.gen}: {g.score:.3f} [{g.low:.3f}, {g.high:.3f}]") for i, g in enumerate(done)]
    ticks = [(y(lo + (hi - lo) * t / 4), f"{lo + (hi - lo) * t / 4:.2f}") for t in range(5)]
    return ScorePlot(points=points, y_ticks=ticks)


def render_lineage_html(view: LineageView) -> str:
    return template("lineage.html.j2").render(v=view, plot=score_plot(view.generations))


def write_lineage_html(run_dir: Path, out: Path) -> Path:
    """Writes the page for the run in `run_dir` to `out` (atomically); links are relative to `out`."""
    out = out.resolve()
    view = collect_lineage(run_dir.resolve(), out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, render_lineage_html(view))
    return out


def write_run_page(run_dir: Path, warn: Callable[[str], None]) -> Path | None:
    """RUN/lineage.html at the end of evolve. A view of the run must never fail the run: any error is
    passed to `warn` with how to write the page later, and None is returned."""
    try:
        return write_lineage_html(run_dir, run_dir / PAGE)
    except Exception as e:  # the run itself is finished and journaled; only its view is missing
        warn(f"warning: {run_dir / PAGE} not written ({type(e).__name__}: {e}); write it later with "
             f"`meta-agent lineage {run_dir} --html {run_dir / PAGE}`")
        return None
