"""Greedy multi-turn chat that keeps each conversation's KV cache from one turn to the next.

A SWE evaluation episode is up to 6 turns; each turn's prompt is the last turn's prompt, the reply and an
observation. Re-encoding the whole conversation every turn (what `inference.greedy_chat` does) spent
~40% of an evaluation's generation time on prefill on 2 CPU cores (bench/results/swe-eval-cache). Here a
conversation's next prompt is matched, token by token, against what the model already encoded for it
(its last prompt and reply): only the rest is encoded. The match is on token ids, so a conversation whose
text re-tokenizes differently (a reply cut mid-token) simply reuses less; nothing is assumed.

Rows move freely between batch slots: a key's rotary position is the count of real tokens before it (the
attention mask's cumulative sum), never its slot, so a cached prefix can be placed behind any amount of
left padding. Greedy answers can still differ from re-encoding on a near-tie, as between two batch
compositions: the matmuls see other shapes. The benchmark counts such differences.

The cache grows in place (`_GrowingLayer`): transformers' `DynamicCache` concatenates every layer's keys
and values with each new token, copying the whole cache per decoded token, a third of a decode step at
1,500 tokens of context on 2 CPU cores. Here each layer writes into a buffer with room to spare and hands
attention a view of the filled part: the same numbers in the same order, so the same answers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from meta_agent.greedy_decode import left_padded
from meta_agent.thread_share import follow_share


@functools.cache
def _growing_layer() -> Any:
    from transformers.cache_utils import DynamicLayer

    class _GrowingLayer(DynamicLayer):
        """A `DynamicLayer` whose keys and values are views of buffers that double when full, so a decoded
        token costs a write of its own keys and values, not a copy of the whole cache."""

        key_buffer: Any = None
        value_buffer: Any = None

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, new = self.get_seq_length(), key_states.shape[-2]
            if self.key_buffer is None or n + new > self.key_buffer.shape[-2]:
                room = max(2 * (n + new), 256)
                keys = key_states.new_empty((*key_states.shape[:2], room, key_states.shape[-1]))
                values = value_states.new_empty((*value_states.shape[:2], room, value_states.shape[-1]))
                if n:
                    keys[:, :, :n] = self.keys
                    values[:, :, :n] = self.values
                self.key_buffer, self.value_buffer = keys, values
            self.key_buffer[:, :, n:n + new] = key_states
            self.value_buffer[:, :, n:n + new] = value_states
            self.keys, self.values = self.key_buffer[:, :, :n + new], self.value_buffer[:, :, :n + new]
            return self.keys, self.values

        def batch_repeat_interleave(self, repeats: int) -> None:
            raise NotImplementedError("the multi-turn evaluator decodes greedily: one sequence per row")

        def batch_select_indices(self, indices: Any) -> None:
            raise NotImplementedError("the multi-turn evaluator decodes greedily: one sequence per row")

        def reorder_cache(self, beam_idx: Any) -> None:
            raise NotImplementedError("the multi-turn evaluator decodes greedily: one sequence per row")

    return _GrowingLayer


def new_cache(config: Any, data: Sequence[tuple[Any, Any]] = (), growing: bool = True) -> Any:
    """A `DynamicCache` for `config`'s model, holding `data` (per layer: keys, values); growing in place
    unless `growing` is False (transformers' own concatenating layers, which the benchmark compares)."""
    from transformers import DynamicCache

    cache: Any = DynamicCache(config=config)
    if growing:
        layer = _growing_layer()
        cache.layers = [layer() for _ in cache.layers]
    for i, (k, v) in enumerate(data):
        cache.layers[i].update(k, v)
    return cache


@dataclass
class _Row:
    tokens: list[int]
    """What the cache holds for this conversation, in order from `start`: its prompt, then the reply."""
    messages: list[dict[str, str]]
    """Its conversation as answered: a later one continues it if it begins with these messages."""
    slot: int
    """Its row in the cache tensors."""
    start: int
    """Where its first token sits along the sequence axis (left padding before it)."""


def _common(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class MultiTurnGreedy:
    """A `Replier` (`domains.swe_scaffold`): the next greedy reply for each conversation, at most `max_new`
    tokens, reusing the cache of a conversation that continues one it answered in the last call. One that
    continues none (a new episode) is encoded whole, so an episode's answers never depend on an earlier
    batch's; each call keeps only its own cache."""

    def __init__(self, model: Any, tokenizer: Any, growing: bool = True) -> None:
        self.model, self.tok, self.growing = model, tokenizer, growing
        self.rows: list[_Row] = []
        self.cache: Any = None
        self.reused_tokens = 0
        """Prompt tokens taken from the cache instead of encoded, over all calls (the benchmark reports it)."""
        self.prompt_tokens = 0

    def __call__(self, convs: Sequence[list[dict[str, str]]], max_new: int) -> list[str]:
        import torch

        follow_share()  # a partner job that ended may have left this one its cores

        texts = [self.tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in convs]
        ids: list[list[int]] = [self.tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        reuse = [self._match(c, x) for c, x in zip(convs, ids, strict=True)]
        width = max(len(x) for x in ids)
        pads = [width - len(x) for x in ids]
        # Slots [0, cached) come from the cache, the rest is encoded. Every row can fill them: a continuing
        # row has at least `cached - pad` matching tokens, a new row has `cached <= pad`.
        cached = width - max(len(x) - n for x, (_, n) in zip(ids, reuse, strict=True))
        past = new_cache(self.model.config, growing=self.growing)
        if cached > 0 and self.cache is not None:
            data = []
            for layer in self.cache.layers:
                k = layer.keys.new_zeros((len(ids), layer.keys.shape[1], cached, layer.keys.shape[3]))
                v = layer.values.new_zeros((len(ids), layer.values.shape[1], cached, layer.values.shape[3]))
                for i, (row, _) in enumerate(reuse):
                    take = cached - pads[i]
                    if row is not None and take > 0:
                        k[i, :, pads[i]:] = layer.keys[row.slot, :, row.start:row.start + take]
                        v[i, :, pads[i]:] = layer.values[row.slot, :, row.start:row.start + take]
                data.append((k, v))
            past = new_cache(self.model.config, data, growing=self.growing)
            self.reused_tokens += sum(max(0, cached - p) for p in pads)
        self.prompt_tokens += sum(len(x) for x in ids)
        pad_id = self.tok.pad_token_id
        input_ids, mask = left_padded(ids, width, pad_id)
        with torch.inference_mode():
            device = self.model.device
            out = self.model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                      past_key_values=past, max_new_tokens=max_new, do_sample=False,
                                      pad_token_id=pad_id, return_dict_in_generate=True)
        generated = out.sequences[:, width:].tolist()
        self.cache = out.past_key_values
        held = self.cache.get_seq_length()  # the last generated token was never fed back: it has no KV
        # After a row's end-of-turn token it is fed padding; those tokens are in `tokens` too, and the next
        # prompt's match stops at the first of them (the template writes a newline there, not padding).
        self.rows = [_Row(tokens=(x + generated[i])[: held - pads[i]], messages=[dict(m) for m in convs[i]],
                          slot=i, start=pads[i]) for i, x in enumerate(ids)]
        return self.tok.batch_decode(out.sequences[:, width:], skip_special_tokens=True)

    def _match(self, conv: list[dict[str, str]], x: list[int]) -> tuple[_Row | None, int]:
        """The row of the last call whose conversation this one continues, and how many of the tokens the
        cache holds for it begin `x` too; never all of `x` (one is encoded). The count can stop short of
        the last prompt where a reply's first characters merge with the template's newline into one token."""
        for row in self.rows:
            if conv[: len(row.messages)] == row.messages:
                return row, min(_common(row.tokens, x), len(x) - 1)
        return None, 0
