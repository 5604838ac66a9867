"""Bootstrap intervals: they cover a known mean at about their level, repeat exactly, and refuse bad pairs."""

from __future__ import annotations

import random

import pytest

from meta_agent.stats import bootstrap_ci, paired_bootstrap_ci


def test_the_95_interval_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    rng = random.Random(0)
    trials, covered = 300, 0
    for t in range(trials):
        sample = [float(rng.random() < 0.3) for _ in range(60)]  # true mean 0.3
        ci = bootstrap_ci(sample, seed=t, resamples=1000)
        covered += ci.low <= 0.3 <= ci.high
    assert 0.88 <= covered / trials <= 0.99, covered / trials


def test_intervals_repeat_exactly_for_a_seed() -> None:
    """A resumed run must decide what the killed one would have: the same seed gives the same interval."""
    rng = random.Random(5)
    sample = [rng.random() for _ in range(50)]
    assert bootstrap_ci(sample, seed=3) == bootstrap_ci(sample, seed=3)
    assert paired_bootstrap_ci(sample, sample[::-1], seed=7) == paired_bootstrap_ci(sample, sample[::-1], seed=7)


def test_a_wider_level_gives_a_wider_interval() -> None:
    sample = [float(i % 3 == 0) for i in range(40)]
    narrow, wide = bootstrap_ci(sample, level=0.9), bootstrap_ci(sample, level=0.99)
    assert wide.low <= narrow.low and wide.high >= narrow.high


def test_pairing_cancels_per_task_difficulty() -> None:
    control = [0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0] * 5
    treatment = [min(1.0, c + 1.0) if i % 4 == 0 else c for i, c in enumerate(control)]
    paired = paired_bootstrap_ci(treatment, control)
    assert paired.mean > 0 and paired.low > 0


def test_unpaired_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap_ci([1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_ci([])
