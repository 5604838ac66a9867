"""The sealed evaluators' greedy decoding, without the two wastes of `model.generate` on a padded batch.

Measured on the math evaluator's prompts (SmolLM2-135M, 2 CPU cores, bench/eval_throughput.py):
- **Padding in the prefill.** A batch is padded to its longest prompt; in a batch of 16 math prompts
  63% of the prefill's tokens were padding. Here each batch's prompts are encoded in groups of similar
  length (sorted, at most `PREFILL_TOKENS` padded tokens a group) and their keys and values are then laid
  side by side, each behind its own left padding, in one cache. The tokens every prompt of the batch
  begins with (chat template and system prompt: 29 of a math prompt's ~56) are encoded once.
- **Finished rows.** `generate` decodes every row until the last one stops; half the math answers end
  by their 13th of 48 tokens. Here a row leaves the batch when it emits end-of-sequence (the cache is
  compacted when a quarter of the rows have left), so later steps cost what the rows still running cost.

Each batch of `batch_size` prompts, in the order given, is decoded on its own, so an evaluation cut into
shards at multiples of the batch (`domains.base.shard_of`) decodes exactly what the whole one does.
A key's rotary position is its count of real tokens before it (the attention mask's cumulative sum), as
in `generate` and `multiturn`: a row's numbers do not depend on the padding placed before it. The
matmuls still see other shapes than `generate`'s, so a near-tie can flip; the benchmark counts answers
that differ from the plain path (none of 100 on SmolLM2) and a test compares both on the tiny policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from meta_agent.thread_share import follow_share

PREFILL_TOKENS = 1024
"""Padded tokens encoded in one forward pass of the prefill: large enough that the matmuls run at the
machine's rate, small enough that a group's padding stays small."""


def _end_tokens(model: Any, tokenizer: Any) -> set[int]:
    ends = getattr(model.generation_config, "eos_token_id", None)
    if ends is None:
        ends = tokenizer.eos_token_id
    if ends is None:
        return set()
    return {int(e) for e in (ends if isinstance(ends, (list, tuple)) else [ends])}


def left_padded(rows: Sequence[Sequence[int]], width: int, pad_id: int) -> tuple[Any, Any]:
    """Token ids and attention mask for `rows`, each right-aligned in `width` behind `pad_id`."""
    import torch

    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, x in enumerate(rows):
        if x:
            ids[i, width - len(x):] = torch.tensor(list(x), dtype=torch.long)
            mask[i, width - len(x):] = 1
    return ids, mask


def _positions(mask: Any) -> Any:
    """Each token's rotary position: the real tokens before it (padding gets 1, as `generate` gives it)."""
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)


def _shared(prompts: list[list[int]]) -> int:
    """How many leading tokens every prompt has in common (the chat template and the system prompt), short
    of each prompt's last token: it is what the first answer token is read from."""
    if len(prompts) < 2:
        return 0
    n = min(len(p) for p in prompts) - 1
    first = prompts[0]
    i = 0
    while i < n and all(p[i] == first[i] for p in prompts):
        i += 1
    return i


def _prefill(model: Any, prompts: list[list[int]], pad_id: int) -> tuple[list[list[tuple[Any, Any]]], list[int]]:
    """Each prompt's keys and values per layer (its own tokens only) and its first greedy token. The tokens
    all prompts begin with are encoded once; a key depends only on the tokens before it, so each prompt's
    own are then encoded after that shared part (a math prompt: 29 of its ~56 tokens)."""
    import torch

    from meta_agent.multiturn import new_cache

    device = model.device
    shared = _shared(prompts)
    prefix: list[tuple[Any, Any]] = []
    if shared:
        cache = new_cache(model.config, growing=False)
        model(input_ids=torch.tensor([prompts[0][:shared]], dtype=torch.long).to(device), past_key_values=cache,
              use_cache=True, logits_to_keep=1)
        prefix = [(layer.keys[0], layer.values[0]) for layer in cache.layers]
    rests = [p[shared:] for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: -len(rests[i]))
    kv: list[list[tuple[Any, Any]]] = [[] for _ in prompts]
    first = [0] * len(prompts)
    g = 0
    while g < len(order):
        width = len(rests[order[g]])
        size = max(1, min(len(order) - g, PREFILL_TOKENS // max(width, 1)))
        group = order[g:g + size]
        ids, mask = left_padded([rests[i] for i in group], width, pad_id)
        cache = new_cache(model.config, [(k.expand(size, -1, -1, -1).contiguous(),
                                          v.expand(size, -1, -1, -1).contiguous()) for k, v in prefix], growing=False)
        seen = torch.cat([torch.ones((size, shared), dtype=torch.long), mask], dim=1)
        out = model(input_ids=ids.to(device), attention_mask=seen.to(device),
                    position_ids=_positions(seen)[:, shared:].to(device), past_key_values=cache, use_cache=True,
                    logits_to_keep=1)
        tokens = out.logits[:, -1].argmax(-1).tolist()
        for j, i in enumerate(group):
            n = len(rests[i])
            own = [(layer.keys[j, :, shared + width - n:], layer.values[j, :, shared + width - n:])
                   for layer in cache.layers]
            kv[i] = [(torch.cat([pk, k], dim=-2), torch.cat([pv, v], dim=-2))
                     for (pk, pv), (k, v) in zip(prefix, own, strict=True)] if shared else own
            first[i] = int(tokens[j])
        g += size
    return kv, first


class _Batch:
    """The rows still decoding: their cache (growing in place), attention mask and answers so far."""

    def __init__(self, model: Any, kv: list[list[tuple[Any, Any]]], lengths: list[int]) -> None:
        import torch

        self.model = model
        self.rows = list(range(len(kv)))
        width = max(lengths)
        self.mask = torch.zeros((len(kv), width), dtype=torch.long)
        for i, n in enumerate(lengths):
            self.mask[i, width - n:] = 1
        self.cache = self._cache([[kv[i][layer] for i in self.rows] for layer in range(len(kv[0]))], width)

    def _cache(self, layers: list[list[tuple[Any, Any]]], width: int) -> Any:
        """A growing cache holding, per layer, these rows' keys and values, each right-aligned in `width`."""
        from meta_agent.multiturn import new_cache

        data = []
        for rows in layers:
            k0 = rows[0][0]
            keys = k0.new_zeros((len(rows), k0.shape[0], width, k0.shape[-1]))
            values = keys.clone()
            for i, (k, v) in enumerate(rows):
                keys[i, :, width - k.shape[-2]:] = k
                values[i, :, width - v.shape[-2]:] = v
            data.append((keys, values))
        return new_cache(self.model.config, data)

    def step(self, tokens: list[int]) -> list[int]:
        """Feed each row its last token; the next greedy token of each."""
        import torch

        one = torch.ones((len(self.rows), 1), dtype=torch.long)
        self.mask = torch.cat([self.mask, one], dim=1)
        device = self.model.device
        out = self.model(input_ids=torch.tensor(tokens, dtype=torch.long).view(-1, 1).to(device),
                         attention_mask=self.mask.to(device), position_ids=_positions(self.mask)[:, -1:].to(device),
                         past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        return [int(t) for t in out.logits[:, -1].argmax(-1).tolist()]

    def keep(self, slots: list[int]) -> None:
        """Only these rows (by slot) go on; columns no remaining row uses are dropped."""
        mask = self.mask[slots]
        used = mask.any(dim=0).nonzero()
        start = int(used[0]) if len(used) else mask.shape[1]
        self.mask = mask[:, start:]
        self.rows = [self.rows[s] for s in slots]
        self.cache = self._cache([[(layer.keys[s, :, start:], layer.values[s, :, start:]) for s in slots]
                                  for layer in self.cache.layers], self.mask.shape[1])


def packed_greedy(model: Any, tokenizer: Any, conversations: Sequence[list[dict[str, str]]], *, max_new_tokens: int,
                  batch_size: int = 16, on_batch: Callable[[int], None] | None = None) -> list[str]:
    """Complete each conversation greedily (at most `max_new_tokens` tokens); the assistant texts in order.
    `on_batch(k)` is called as each batch of k conversations is done."""
    import torch

    if not conversations:
        return []
    texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in conversations]
    prompts: list[list[int]] = [list(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ends = _end_tokens(model, tokenizer)
    answers: list[list[int]] = [[] for _ in prompts]
    for start in range(0, len(prompts), max(1, batch_size)):
        follow_share()  # a partner job that ended may have left this one its cores
        block = list(range(start, min(start + max(1, batch_size), len(prompts))))
        with torch.inference_mode():
            kv, first = _prefill(model, [prompts[i] for i in block], pad_id)
            batch = _Batch(model, kv, [len(prompts[i]) for i in block])
            del kv
            last = first
            done = [False] * len(block)
            while True:
                for slot, token in enumerate(last):
                    row = batch.rows[slot]
                    if done[row]:
                        continue
                    answers[block[row]].append(token)
                    if token in ends or len(answers[block[row]]) >= max_new_tokens:
                        done[row] = True
                running = [s for s, row in enumerate(batch.rows) if not done[row]]
                if not running:
                    break
                if (len(batch.rows) - len(running)) * 4 >= len(batch.rows):  # a quarter has ended: compact
                    batch.keep(running)
                    last = [last[s] for s in running]
                last = batch.step(last)
        if on_batch:
            on_batch(len(block))
    return tokenizer.batch_decode(answers, skip_special_tokens=True)
