"""The benchmark's arithmetic: compute counted from training runs' files, IQM, stratified bootstrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_agent.efficacy.compute import of_evolve
from meta_agent.stats import iqm, stratified_bootstrap_ci


def _training(path: Path, steps: int, completions: int) -> None:
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("{}\n" * steps)
    (path / "rollouts.jsonl").write_text("{}\n" * completions)


def test_compute_is_counted_from_the_runs_each_arm_trained(tmp_path: Path) -> None:
    _training(tmp_path / "gen-000" / "main", 2, 16)
    _training(tmp_path / "gen-000" / "cand-0" / "train", 1, 8)
    _training(tmp_path / "gen-000" / "noise-0", 2, 16)
    _training(tmp_path / "gen-001" / "main", 2, 16)
    _training(tmp_path / "gen-001" / "cand-1" / "train", 3, 24)
    _training(tmp_path / "static" / "g1", 2, 16)  # main changed after gen 0: the static arm trained its own
    c = of_evolve(tmp_path)
    assert (c.evolved.steps, c.evolved.completions, c.evolved.runs) == (4, 32, 2)
    assert (c.static.steps, c.static.completions, c.static.runs) == (4, 32, 2), "gen 0's main run is reused"
    assert (c.search.steps, c.search.completions, c.search.runs) == (6, 48, 3)


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    assert iqm([1, 2, 3, 4, 100]) == 3.0
    assert iqm([0.1, 0.2, 0.3, 0.4]) == pytest.approx(0.25)
    assert iqm([5]) == 5.0


def test_the_bootstrap_resamples_within_each_stratum() -> None:
    ci = stratified_bootstrap_ci({"a": [0.0, 0.0, 0.0], "b": [1.0, 1.0, 1.0]}, "mean")
    assert (ci.mean, ci.low, ci.high, ci.n) == (0.5, 0.5, 0.5, 6), "each resample keeps three of each stratum"
    pooled = stratified_bootstrap_ci({"all": [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]}, "mean")
    assert pooled.low < 0.5 < pooled.high
    assert stratified_bootstrap_ci({"s": [0.1, 0.2, 0.3, 5.0]}, "iqm").mean == pytest.approx(0.25)
