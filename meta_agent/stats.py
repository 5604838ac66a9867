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
