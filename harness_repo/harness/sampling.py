"""The next token drawn by inverse CDF instead of `torch.multinomial`, while the harness samples on a CPU.

Why: transformers' sampling loop draws each token with `torch.multinomial(probs, num_samples=1)`. On a
CPU that draws an exponential variate for every word of the vocabulary (49,152 for SmolLM2): 9-10 ms a
call on 2 cores for 8 rows, once per token, in a decode step of ~100-120 ms. A cumulative sum and a
binary search draw from the same distribution in 0.2 ms; SmolLM2's merged sampler then generated 8 x 48
tokens in 0.855x the time (bench/sampler_draw.py).

What changes: the random stream, not the distribution. A row's token is the first whose cumulative
probability exceeds a uniform draw scaled to the row's total, so a zero-probability word (masked by
top-p, top-k or a logits processor) can never be drawn. Calls this does not cover (more than one
sample, a GPU tensor, an `out=` argument, a row that is not a finite positive distribution) go to
`torch.multinomial` itself, which also raises its own errors on bad input.

`torch.multinomial` is replaced for the duration of the `with` block only, process-wide: the harness
samples on one thread, and nothing else in a training process draws while it does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

_multinomial = torch.multinomial


def categorical(probs: torch.Tensor, num_samples: int, replacement: bool = False, *,
                generator: torch.Generator | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """`torch.multinomial`'s signature; one draw per row of a 2-D CPU tensor by inverse CDF."""
    if num_samples != 1 or probs.dim() != 2 or probs.device.type != "cpu" or out is not None or probs.size(1) == 0:
        return _multinomial(probs, num_samples, replacement, generator=generator, out=out)
    cdf = probs.to(torch.float64).cumsum(-1)
    total = cdf[:, -1:]
    if not bool(torch.isfinite(total).all()) or bool((total <= 0).any()) or bool((probs < 0).any()):
        return _multinomial(probs, num_samples, replacement, generator=generator)  # raises as torch does
    u = torch.rand(probs.size(0), 1, generator=generator, dtype=torch.float64) * total
    drawn = torch.searchsorted(cdf, u, right=True).clamp_(max=probs.size(1) - 1)
    # u * total can round up to the total itself; the clamp then lands on the last word, which may be one
    # a processor removed. Such a row (about once in 2^52 draws) is drawn again the usual way.
    bad = probs.gather(1, drawn) <= 0
    if bool(bad.any()):
        rows = bad.squeeze(1).nonzero().squeeze(1)
        drawn[rows] = _multinomial(probs[rows], 1, generator=generator)
    return drawn


@contextmanager
def fast_categorical(enabled: bool = True) -> Iterator[None]:
    """Within the block, `torch.multinomial` is `categorical` (see the module docstring)."""
    if not enabled:
        yield
        return
    saved: Any = torch.multinomial
    torch.multinomial = categorical  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.multinomial = saved
