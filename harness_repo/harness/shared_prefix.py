"""The learner's log-probs with each GRPO group's prompt encoded once.

A GRPO step scores `num_generations` completions of every prompt, and TRL's learner forward runs each row
whole: a group's prompt goes through the model, forward and backward, once per completion. At the math
template's shape (51-token prompts, 4 completions of 48 tokens) that is 45% of the tokens the learner
runs, spent four times on the same text.

Here the rows whose prompt part is the same (ids and mask: a group's rows, since TRL pads prompts the same
way) encode that prompt, all but its last token, once, keeping the KV cache. The cache is indexed out to
every row that shares it, and each row then runs its last prompt token and its completion through the
model's own forward, TRL's fused log-prob head included, attending to that cache. The positions, the
attention mask and the head are the plain forward's, and gradients flow back through the indexed cache
into the shared prefix (summed over the group's rows, as separate rows would have summed them in the
weights): the log-probs, entropies and gradients are the plain path's up to float rounding
(tests/foundation/test_shared_prefix.py). `bench/grpo_overhead.py` measures the step.

Anything it does not know how to share falls back to TRL's own path (None): no two rows share a prompt,
a vision or MoE input, gradient checkpointing (the cache is dropped there), or a model whose cache is not
plain full attention.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import torch


def prefix_groups(input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  logits_to_keep: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(first row of each distinct prompt part, each row's index into those), or None when no two rows share
    one or there is no prompt before the last prompt token to share."""
    prompt_len = input_ids.size(1) - logits_to_keep
    if prompt_len < 2 or input_ids.size(0) < 2:
        return None
    key = torch.cat([input_ids[:, :prompt_len], attention_mask[:, :prompt_len].to(input_ids.dtype)], dim=1)
    distinct, inverse = torch.unique(key, dim=0, return_inverse=True)
    if distinct.size(0) == input_ids.size(0):
        return None
    first = torch.full((distinct.size(0),), input_ids.size(0), dtype=torch.long, device=input_ids.device)
    first.scatter_reduce_(0, inverse, torch.arange(input_ids.size(0), device=input_ids.device), reduce="amin")
    return first, inverse


def _causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The transformers model under a PEFT wrapper (what TRL patched with its fused head)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _checkpointing(lm: torch.nn.Module) -> bool:
    """Whether activation checkpointing is on (transformers 5 renamed the flag; the old name warns)."""
    name = "is_activation_checkpointing" if hasattr(type(lm), "is_activation_checkpointing") else \
        "is_gradient_checkpointing"
    return bool(getattr(lm, name, False))


def plain_full_attention(cache: Any) -> bool:
    """Whether every layer of `cache` holds every position's keys and values in order (no sliding window,
    no static or quantized layers): only then can rows be sliced out of it by position."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    return isinstance(cache, DynamicCache) and all(type(layer) is DynamicLayer for layer in cache.layers)


def shared_prefix_logps(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        logits_to_keep: int, compute_entropy: bool,
                        autocast: AbstractContextManager[Any]) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """(per-token log-probs, entropies or None) of the last `logits_to_keep` tokens of every row, as TRL's
    `_get_per_token_logps_and_entropies` returns them; None where this path does not apply."""
    lm = _causal_lm(model)
    if _checkpointing(lm) or getattr(lm.config, "output_router_logits", False):
        return None
    groups = prefix_groups(input_ids, attention_mask, logits_to_keep)
    if groups is None:
        return None
    first, inverse = groups
    cut = input_ids.size(1) - logits_to_keep - 1  # the shared prefix: the prompt but its last token
    backbone = getattr(lm, "base_model", None)
    if backbone is None or backbone is lm:
        return None
    with autocast:
        cache = backbone(input_ids=input_ids[first, :cut], attention_mask=attention_mask[first, :cut],
                         use_cache=True).past_key_values
        if not plain_full_attention(cache):
            return None
        cache.batch_select_indices(inverse)
        tail = input_ids[:, cut:]
        labels = tail.masked_fill(attention_mask[:, cut:] == 0, -100)
        labels[:, 0] = -100  # the last prompt token: its hidden state predicts the completion's first token
        out = model(input_ids=tail, attention_mask=attention_mask, past_key_values=cache, labels=labels,
                    fused_lm_head=True)
    return out.log_probs[:, -logits_to_keep:], (out.entropy[:, -logits_to_keep:] if compute_entropy else None)
