"""Batched chat generation for the sealed evaluators (CPU or GPU, transformers): greedy or sampled."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def chat_generate(
    model: Any,
    tokenizer: Any,
    conversations: Sequence[list[dict[str, str]]],
    *,
    max_new_tokens: int,
    batch_size: int = 16,
    n: int = 1,
    temperature: float | None = None,
    seed: int = 0,
    on_batch: Callable[[int], None] | None = None,
) -> list[list[str]]:
    """`n` assistant texts per conversation, in order: greedy when `temperature` is None, else sampled
    (seeded, so an evaluation is reproducible on one machine). `batch_size` counts sequences."""
    import torch

    if temperature is not None:
        torch.manual_seed(seed)
    texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in conversations]
    sampling: dict[str, Any] = ({"do_sample": False} if temperature is None else
                                {"do_sample": True, "temperature": temperature, "top_p": 1.0})
    out: list[list[str]] = []
    per_batch = max(1, batch_size // n)
    for start in range(0, len(texts), per_batch):
        chunk = texts[start : start + per_batch]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        with torch.inference_mode():
            gen = model.generate(**enc, max_new_tokens=max_new_tokens, num_return_sequences=n,
                                 pad_token_id=tokenizer.pad_token_id, **sampling)
        decoded = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        out.extend(decoded[i * n : (i + 1) * n] for i in range(len(chunk)))
        if on_batch:
            on_batch(len(chunk))
    return out


def greedy_chat(model: Any, tokenizer: Any, conversations: Sequence[list[dict[str, str]]], *, max_new_tokens: int,
                batch_size: int = 16, on_batch: Callable[[int], None] | None = None) -> list[str]:
    """Complete each conversation greedily; returns the assistant texts in order. On a CPU decoded by
    `greedy_decode.packed_greedy` (no padded prefill, ended answers leave the batch: the same answers, faster
    on 2 cores, bench/eval_throughput.py); on a GPU by `model.generate` on padded batches (`chat_generate`),
    measured there at 3.7x for 64 a batch (bench/gpu_eval_fast.py), where the packed path has not run yet."""
    if getattr(getattr(model, "device", None), "type", "cpu") == "cpu":
        from meta_agent.greedy_decode import packed_greedy

        return packed_greedy(model, tokenizer, conversations, max_new_tokens=max_new_tokens, batch_size=batch_size,
                             on_batch=on_batch)
    return [texts[0] for texts in chat_generate(model, tokenizer, conversations, max_new_tokens=max_new_tokens,
                                                batch_size=batch_size, on_batch=on_batch)]


def evaluator_chat(model: Any, tokenizer: Any, conversations: Sequence[list[dict[str, str]]], *,
                   max_new_tokens: int, batch_size: int, evaluator: Any,
                   on_batch: Callable[[int], None] | None = None) -> list[str]:
    """The sealed evaluator's greedy answers, generated as its `EvaluatorSettings` say (serving.py; None:
    in this process)."""
    if evaluator is not None and evaluator.generation == "vllm":
        from meta_agent.serving import served_greedy_chat

        return served_greedy_chat(model, tokenizer, conversations, max_new_tokens=max_new_tokens,
                                  settings=evaluator, on_batch=on_batch)
    return greedy_chat(model, tokenizer, conversations, max_new_tokens=max_new_tokens, batch_size=batch_size,
                       on_batch=on_batch)
