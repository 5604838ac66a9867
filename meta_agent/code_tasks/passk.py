"""pass@k: sampled completions per task and the unbiased estimator of Chen et al. (2021).

pass@k = E_tasks[1 - C(n - c, k) / C(n, k)] for n samples of which c pass; lower variance than
drawing k samples once. Sampling is seeded, so an evaluation is reproducible on one machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import comb
from typing import Any


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k of the n samples passes, given c of them do."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n; got n={n}, c={c}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def sample_chat(
    model: Any,
    tokenizer: Any,
    conversations: Sequence[list[dict[str, str]]],
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    batch_size: int = 8,
    seed: int = 0,
    on_batch: Callable[[int], None] | None = None,
) -> list[list[str]]:
    """n sampled assistant texts per conversation, in order."""
    from meta_agent.inference import chat_generate

    return chat_generate(model, tokenizer, conversations, max_new_tokens=max_new_tokens, batch_size=batch_size, n=n,
                         temperature=temperature, seed=seed, on_batch=on_batch)
