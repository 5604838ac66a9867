"""The rollout report names what went wrong, with curves, a label histogram and exemplars."""

from __future__ import annotations

from pathlib import Path

import git

from meta_agent.report.render import write_report
from meta_agent.training import TrainedRun


def test_report_names_the_dominant_failure_modes_with_exemplars(
    trained: tuple[git.Repo, TrainedRun, Path], tmp_path: Path
) -> None:
    _, run, _ = trained
    report = run.report
    # A random tiny model never answers: everything is truncated and every group has zero variance.
    assert report.truncation_rate == 1.0
    assert report.zero_variance_groups == report.groups
    assert {"truncated", "zero_variance_group", "format_violation"} <= set(report.dominant)
    for stat in report.labels:
        assert stat.exemplars, f"label {stat.label} has no exemplar"
    paths = write_report(report, tmp_path)
    md = paths["md"].read_text()
    assert "Dominant failure modes:** truncated" in md or "truncated" in md.split("Dominant failure modes")[1]
    assert "| 2 |" in md  # one row per step
    html = paths["html"].read_text()
    assert html.count("data:image/png;base64,") == 2
