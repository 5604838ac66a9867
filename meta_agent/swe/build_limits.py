"""Time limits of a task build, each derived from the project's own suite at its base commit (`BaseRun`):
how long a mutant's tests may run, its re-check alone, a stalled test, and an instance's test runs."""

from __future__ import annotations

from meta_agent.swe.mutant_log import BaseRun


def mutant_timeout(base: BaseRun) -> float:
    """Tight, since mutants that loop forever are common and each costs this much."""
    return 5.0 + 2.0 * base.wall_time


def recheck_timeout(base: BaseRun) -> float:
    """The re-check's limit for the whole run: ten times the tight timeout."""
    return 10.0 * mutant_timeout(base)


def stall_timeout(base: BaseRun) -> float:
    """The re-check's limit for one test: 20 s + 10 x the slowest test at the base.

    A mutant that hangs costs about this (not the whole-run limit); one whose tests are
    slow but keep finishing gets up to recheck_timeout.
    """
    return 20.0 + 10.0 * base.slowest


def instance_timeout(base: BaseRun) -> float:
    """An instance's test-run limit: 30 s + 3 x the suite's time, rounded up to 1, 2, 4, ... minutes.

    Rounding keeps the value (which is part of the instance) the same on a busy and an idle
    machine, so two builds of one set give the same files.
    """
    minutes = 1
    while minutes * 60 < 30.0 + 3.0 * base.wall_time:
        minutes *= 2
    return float(minutes * 60)
