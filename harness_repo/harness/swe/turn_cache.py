"""Each episode's KV cache kept from one turn to the next within a rollout.

A training episode's next turn is generated from everything before it: the prompt, every earlier reply and
observation. Handing `generate` that whole sequence each turn re-encodes the conversation so far, and on a
CPU that prefill costs more than the turn's own decoding once a conversation holds a few hundred tokens.
Here the cache `generate` returns is kept, and the next turn takes from it, row by row, the keys and values
of the tokens its episode already encoded; only the reply's last token and the new observation are encoded.

The match is on token ids: an episode reuses the longest prefix of its new sequence that the cache holds
for it, never all of it (one token is always encoded, to give the next-token distribution). A cached
token's keys depend only on the tokens before it, so any matching prefix is sound, including padding
`generate` fed after a row's end-of-turn token where the next sequence happens to hold the same token.
A row's keys can move to any batch slot behind any amount of left padding, because their rotary positions
count the row's real tokens (the attention mask's cumulative sum), not its slot.

What changes is float rounding: the cached keys were computed in a batch of another shape, so a sampled
token can differ where two words' probabilities are within rounding of the draw, as between two batch
compositions. `tests/swe_domain/test_turn_cache.py` checks that greedy turns equal re-encoding's token for
token and that sampled episodes from the same seed come out the same on the tiny policy;
`bench/swe_rollout_cache.py` measures the time (and prints each arm's episode length).

The sealed evaluator does the same for greedy replies (meta_agent/multiturn.py); this is the harness's own
copy because harness code runs in its sandbox without meta-agent's package, and it matches on the
episode's exact token ids (no re-tokenised text). A model whose cache is not plain full attention (a
sliding window, a hybrid of layer kinds) is re-encoded every turn as before.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from harness.shared_prefix import plain_full_attention


class _Held(NamedTuple):
    """What the cache holds for one episode: its tokens with keys and values there, in order; its row in
    the cache tensors; and where along the sequence axis its first token sits (left padding before it)."""

    tokens: list[int]
    slot: int
    start: int


def _common(a: list[int], b: list[int]) -> int:
    """How many tokens `a` and `b` begin with alike."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def left_padded(seqs: list[list[int]], pad: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and attention mask, left-padded to the longest, on the model's device (generate does not
    move its inputs: CPU ids beside a GPU model stop the first turn)."""
    width = max(len(x) for x in seqs)
    ids = torch.tensor([[pad] * (width - len(x)) + x for x in seqs], device=device)
    mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in seqs], device=device)
    return ids, mask


class TurnCache:
    """`generate` for a batch of episodes, each named by a key, reusing what the last call encoded for
    the same key. Lives for one rollout: a new rollout (new weights) starts empty."""

    def __init__(self) -> None:
        self.cache: Any = None
        self.held: dict[int, _Held] = {}
        self.reused_tokens = 0
        """Prompt tokens taken from the cache instead of encoded, over all calls."""
        self.prompt_tokens = 0

    def generate(self, model: Any, seqs: list[list[int]], keys: list[int], pad: int,
                 **kwargs: Any) -> list[list[int]]:
        """The generated tokens of each row (after its prompt, padding included after an end token)."""
        width = max(len(x) for x in seqs)
        pads = [width - len(x) for x in seqs]
        reuse = [self._reusable(k, x) for k, x in zip(keys, seqs, strict=True)]
        # Slots [0, cached) come from the cache; every row can fill them: a continuing row holds at least
        # `cached - pad` matching tokens, a new one has `cached <= pad` (all padding).
        cached = width - max(len(x) - n for x, (_, n) in zip(seqs, reuse, strict=True))
        past = None
        if cached > 0 and self.cache is not None:
            past = self._past(model.config, reuse, pads, cached)
            self.reused_tokens += sum(max(0, cached - p) for p in pads)
        self.cache = None  # what is reused was copied out: let it go before this turn's cache grows
        self.prompt_tokens += sum(len(x) for x in seqs)
        ids, mask = left_padded(seqs, pad, model.device)
        out = model.generate(input_ids=ids, attention_mask=mask, past_key_values=past, pad_token_id=pad,
                             return_dict_in_generate=True, **kwargs)
        generated = out.sequences[:, width:].tolist()
        if not plain_full_attention(out.past_key_values):
            # A sliding window or a hybrid cache does not hold every position in order: re-encode instead.
            self.cache, self.held = None, {}
            return generated
        self.cache = out.past_key_values
        filled = self.cache.get_seq_length()  # the last generated token was never fed back: it has none
        self.held = {k: _Held((x + generated[i])[: filled - pads[i]], i, pads[i])
                     for i, (k, x) in enumerate(zip(keys, seqs, strict=True))}
        return generated

    def _reusable(self, key: int, x: list[int]) -> tuple[_Held | None, int]:
        held = self.held.get(key)
        if held is None:
            return None, 0
        return held, min(_common(held.tokens, x), len(x) - 1)

    def _past(self, config: Any, reuse: list[tuple[_Held | None, int]], pads: list[int], cached: int) -> Any:
        from transformers import DynamicCache

        past: Any = DynamicCache(config=config)
        for layer, old in zip(past.layers, self.cache.layers, strict=True):
            shape = (len(reuse), old.keys.shape[1], cached, old.keys.shape[3])
            keys, values = old.keys.new_zeros(shape), old.values.new_zeros(shape)
            for i, (held, _) in enumerate(reuse):
                take = cached - pads[i]
                if held is not None and take > 0:
                    keys[i, :, pads[i]:] = old.keys[held.slot, :, held.start:held.start + take]
                    values[i, :, pads[i]:] = old.values[held.slot, :, held.start:held.start + take]
            layer.update(keys, values)
        return past
