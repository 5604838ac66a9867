"""Bootstrap confidence intervals: for one score and for a paired difference per task."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel


class Interval(BaseModel):
    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}] (n={self.n})"


def bootstrap_ci(values: Sequence[float], *, level: float = 0.95, resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap CI of the mean."""
    import numpy as np  # here, not at the top: the config imports this module's Interval

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    alpha = (1 - level) / 2
    return Interval(
        mean=float(x.mean()),
        low=float(np.quantile(means, alpha)),
        high=float(np.quantile(means, 1 - alpha)),
        n=int(x.size),
    )


def paired_bootstrap_ci(
    treatment: Sequence[float], control: Sequence[float], *, level: float = 0.95, resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """CI of mean(treatment - control) resampling tasks, so per-task difficulty cancels out."""
    if len(treatment) != len(control):
        raise ValueError(f"paired samples differ in length: {len(treatment)} vs {len(control)}")
    diffs = [float(t) - float(c) for t, c in zip(treatment, control, strict=True)]
    return bootstrap_ci(diffs, level=level, resamples=resamples, seed=seed)


def iqm(values: Sequence[float]) -> float:
    """Interquartile mean: the mean of the middle half (25% trimmed each side), as rliable reports it;
    robust to one outlying seed, less noisy than the median."""
    import numpy as np

    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        raise ValueError("iqm needs at least one value")
    cut = int(np.floor(0.25 * x.size))
    return float(x[cut:x.size - cut].mean())


def stratified_bootstrap_ci(strata: dict[str, Sequence[float]], stat: str = "mean", *, level: float = 0.95,
                            resamples: int = 2000, seed: int = 0) -> Interval:
    """CI of `stat` (mean or iqm) over runs pooled from several strata (e.g. domains), resampling runs
    with replacement *within* each stratum, as rliable's stratified bootstrap does. With one stratum
    this is the percentile bootstrap over runs (seeds)."""
    import numpy as np

    fn = {"mean": lambda v: float(np.mean(v)), "iqm": iqm}[stat]
    groups = [np.asarray(v, dtype=float) for v in strata.values() if len(v)]
    if not groups:
        raise ValueError("stratified_bootstrap_ci needs at least one value")
    rng = np.random.default_rng(seed)
    stats = [fn(np.concatenate([g[rng.integers(0, g.size, g.size)] for g in groups])) for _ in range(resamples)]
    alpha = (1 - level) / 2
    pooled = np.concatenate(groups)
    return Interval(mean=fn(pooled), low=float(np.quantile(stats, alpha)), high=float(np.quantile(stats, 1 - alpha)),
                    n=int(pooled.size))


class McNemar(BaseModel):
    """Exact McNemar test of two arms scored on the same tasks (pass/fail each)."""

    wins: int
    """Tasks the first arm passes and the second fails."""
    losses: int
    """Tasks the second arm passes and the first fails."""
    p: float
    """Two-sided exact p-value: the binomial test of wins against losses + wins at 1/2 (1.0 when they tie on
    every task: no discordant pair, no evidence either way)."""

    def __str__(self) -> str:
        return f"{self.wins}-{self.losses} (p={self.p:.3g})"


def mcnemar_exact(first: Sequence[float], second: Sequence[float]) -> McNemar:
    """McNemar's exact test for paired pass/fail outcomes (a score above 0.5 counts as a pass). Unlike a
    bootstrap CI over tasks, it stays honest with few discordant tasks (5 wins to 0 is p = 0.0625)."""
    from math import comb

    if len(first) != len(second):
        raise ValueError(f"paired samples differ in length: {len(first)} vs {len(second)}")
    wins = sum(1 for a, b in zip(first, second, strict=True) if a > 0.5 >= b)
    losses = sum(1 for a, b in zip(first, second, strict=True) if b > 0.5 >= a)
    n = wins + losses
    tail = sum(comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return McNemar(wins=wins, losses=losses, p=min(1.0, 2 * tail) if n else 1.0)


def hierarchical_bootstrap_ci(groups: Sequence[Sequence[float]], *, level: float = 0.95, resamples: int = 2000,
                              seed: int = 0) -> Interval:
    """CI of the mean of group means (e.g. per-task paired differences, one group per seed), resampling
    groups with replacement and then the values within each drawn group. With three seeds, a bootstrap
    over the three seed means alone has the worst seed as its lower bound and ignores that each seed's
    mean is itself an estimate from a few dozen tasks; this carries both sources of noise."""
    import numpy as np

    arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not arrays:
        raise ValueError("hierarchical_bootstrap_ci needs at least one non-empty group")
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    for r in range(resamples):
        drawn = rng.integers(0, len(arrays), len(arrays))
        stats[r] = np.mean([arrays[i][rng.integers(0, arrays[i].size, arrays[i].size)].mean() for i in drawn])
    alpha = (1 - level) / 2
    return Interval(mean=float(np.mean([a.mean() for a in arrays])), low=float(np.quantile(stats, alpha)),
                    high=float(np.quantile(stats, 1 - alpha)), n=len(arrays))
