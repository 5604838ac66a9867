"""Greedy batched generation for the sealed evaluators (CPU or GPU, transformers)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch


def greedy_chat(
    model: Any,
    tokenizer: Any,
    conversations: Sequence[list[dict[str, str]]],
    *,
    max_new_tokens: int,
    batch_size: int = 16,
    on_batch: Callable[[int], None] | None = None,
) -> list[str]:
    """Complete each conversation greedily; returns the assistant texts in order."""
    texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in conversations]
    out: list[str] = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            gen = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
        new = gen[:, enc["input_ids"].shape[1] :]
        out.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
        if on_batch:
            on_batch(len(chunk))
    return out
