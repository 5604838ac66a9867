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
