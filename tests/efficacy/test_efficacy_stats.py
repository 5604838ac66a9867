"""The benchmark's arithmetic: compute counted from training runs' files, IQM, stratified bootstrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.efficacy_lib.compute import of_evolve
from bench.efficacy_lib.evolve_run import merged_titles
from meta_agent.eventlog import EventLog
from meta_agent.journal import CandidateCreated, Merged
from meta_agent.stats import hierarchical_bootstrap_ci, iqm, mcnemar_exact, stratified_bootstrap_ci


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


def test_a_merge_built_on_an_archived_candidate_is_reported_with_both_changes(tmp_path: Path) -> None:
    log = EventLog(tmp_path)

    def created(cand_id: str, title: str, parent: str | None = None) -> None:
        log.append(CandidateCreated(cand_id=cand_id, run_id="r", gen=int(cand_id[-3]), k=int(cand_id[-1]),
                                    branch=f"cand/{cand_id}", commit="a" * 40, ok=True, reason="", title=title,
                                    kind="performance", skills=[],
                                    parent=parent))

    created("r/0-1", "Apply the recipe")
    created("r/1-1", "Apply skill overlong-shaping", parent="r/0-1")
    created("r/2-0", "Apply skill format-reward")
    log.append(Merged(cand_id="r/1-1", merge_commit="c" * 40, branch="cand/r/1-1"))
    log.append(Merged(cand_id="r/2-0", merge_commit="d" * 40, branch="cand/r/2-0"))
    assert merged_titles(tmp_path) == ["Apply skill overlong-shaping, on r/0-1 (Apply the recipe)",
                                       "Apply skill format-reward"]


def test_mcnemar_is_the_exact_binomial_test_on_the_tasks_the_arms_disagree_on() -> None:
    # seed 2 of the archived CPU benchmark: 5 wins, 0 losses, 55 ties -> p = 2 / 2**5
    evolved = [1.0] * 5 + [1.0] * 10 + [0.0] * 45
    static = [0.0] * 5 + [1.0] * 10 + [0.0] * 45
    t = mcnemar_exact(evolved, static)
    assert (t.wins, t.losses) == (5, 0) and t.p == pytest.approx(0.0625)
    assert mcnemar_exact([1.0, 0.0], [1.0, 0.0]).p == 1.0, "no discordant pair: no evidence either way"
    assert mcnemar_exact([1, 1, 0, 1, 0, 1, 1], [0, 0, 1, 0, 1, 0, 0]).p == pytest.approx(2 * (1 + 7 + 21) / 2**7)
    with pytest.raises(ValueError, match="paired"):
        mcnemar_exact([1.0], [1.0, 0.0])


def test_the_hierarchical_bootstrap_carries_the_task_noise_the_seed_bootstrap_drops() -> None:
    # three seeds whose mean differences are 0.10, 0.15, 0.20, each over 20 tasks of +1/0/-1
    seeds = [[1.0] * 4 + [-1.0] * 2 + [0.0] * 14, [1.0] * 4 + [-1.0] * 1 + [0.0] * 15, [1.0] * 4 + [0.0] * 16]
    over_seeds = stratified_bootstrap_ci({"math": [sum(s) / len(s) for s in seeds]}, "mean")
    nested = hierarchical_bootstrap_ci(seeds)
    assert nested.mean == pytest.approx(0.15) and nested.n == 3
    assert over_seeds.low == pytest.approx(0.10), "the seed-only percentile bootstrap bottoms out at the worst seed"
    assert nested.low < over_seeds.low and nested.high > over_seeds.high, "tasks are resampled too"
    assert hierarchical_bootstrap_ci([[0.5, 0.5]] * 3).low == 0.5, "no spread anywhere: a point"
    with pytest.raises(ValueError, match="at least one"):
        hierarchical_bootstrap_ci([])


def test_the_swe_reference_rate_has_an_exact_interval_that_is_not_zero_wide_at_zero() -> None:
    # 0 of 56 resolved is not "0.000 [0.000, 0.000]" (what a bootstrap says): the rate may be up to 6.4%.
    from bench.swe_reference import exact_interval

    low, high = exact_interval(0, 56)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 56), abs=1e-6)
    low, high = exact_interval(56, 56)
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 56), abs=1e-6)
    assert exact_interval(5, 10) == pytest.approx((0.1871, 0.8129), abs=1e-4)
