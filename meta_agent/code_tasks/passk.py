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
    import torch

    torch.manual_seed(seed)
    texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in conversations]
    out: list[list[str]] = []
    per_batch = max(1, batch_size // n)
    for start in range(0, len(texts), per_batch):
        chunk = texts[start : start + per_batch]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            gen = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=True, temperature=temperature,
                                 top_p=1.0, num_return_sequences=n, pad_token_id=tokenizer.pad_token_id)
        decoded = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        out.extend(decoded[i * n : (i + 1) * n] for i in range(len(chunk)))
        if on_batch:
            on_batch(len(chunk))
    return out
