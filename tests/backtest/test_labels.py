"""A new diagnostic label is judged by lift over the base rate, tested for chance, not by raw precision."""

from __future__ import annotations

import random

from meta_agent.backtest.labels import fisher_one_sided, judge_label


def test_a_random_label_when_almost_everything_is_rejected_fails() -> None:
    """The reproduction: 51 of 52 rollouts rejected, a label on a random ~30% has precision ~0.9+."""
    rng = random.Random(1)
    rejected = {str(i): i != 0 for i in range(52)}
    flags = {str(i): rng.random() < 0.3 for i in range(52)}
    evidence = judge_label("coin", flags, rejected)
    assert evidence.precision >= 0.8, "raw precision looks good..."
    assert not evidence.passed, "...but the label is no better than the base rate"
    assert "base rate" in evidence.reason


def test_a_label_that_picks_out_rejected_rollouts_passes() -> None:
    rejected = {str(i): i % 3 == 0 for i in range(60)}
    flags = {str(i): i % 3 == 0 and i < 45 for i in range(60)}
    evidence = judge_label("hedge", flags, rejected)
    assert evidence.passed, evidence.reason
    assert evidence.lift > 0.5 and evidence.p_value < 0.001


def test_too_few_flags_cannot_be_judged() -> None:
    rejected = {str(i): i < 10 for i in range(40)}
    flags = {str(i): i < 2 for i in range(40)}
    assert not judge_label("rare", flags, rejected).passed


def test_fisher_tail_matches_the_hypergeometric_by_hand() -> None:
    # 4 flagged out of 10, 5 rejected in all; P(all 4 flagged are rejected) = C(5,4)*C(5,0)/C(10,4) = 5/210
    assert abs(fisher_one_sided(4, 4, 5, 10) - 5 / 210) < 1e-12
    assert fisher_one_sided(0, 4, 5, 10) == 1.0
