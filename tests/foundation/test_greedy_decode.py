"""The evaluator's packed greedy decoding answers exactly as `model.generate` on padded batches did."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from meta_agent.domains.math import EVAL_SYSTEM, MathDomain
from meta_agent.domains.settings import MathSettings

pytestmark = pytest.mark.slow  # loads a model: not in `make test-fast`


def _speaking_policy(tiny_policy: Path) -> tuple[Any, Any]:
    """The tiny policy with its weights redrawn larger: as initialised it echoes the prompt's last token for
    every prompt, and equal answers would prove nothing."""
    import torch

    from meta_agent.policy import load_for_inference

    model, tok = load_for_inference(tiny_policy)
    draw = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=draw) * 0.2)
    return model, tok


def _convs(n: int) -> list[list[dict[str, str]]]:
    tasks = MathDomain(MathSettings(train_size=n)).tasks("train")[:n]
    assert len(tasks) == n
    return [[{"role": "system", "content": EVAL_SYSTEM}, {"role": "user", "content": t.prompt}] for t in tasks]


def test_rows_that_stop_early_leave_the_batch_without_changing_any_answer(tiny_policy: Path) -> None:
    """A user's complaint this answers: "the faster evaluator scored my checkpoint differently". The plain
    path (`model.generate`, padded batches of 16, torch's `F.linear`) and the packed one (products on
    oneDNN-packed weights, meta_agent/decode_linear.py; batches of 16 and of 64, prompts of
    different lengths, rows leaving as they end) give the same text for every prompt. A second end token
    the random policy often says makes rows end at many different steps, so rows do leave mid-batch."""
    from meta_agent import decode_linear
    from meta_agent.inference import chat_generate, greedy_chat

    model, tok = _speaking_policy(tiny_policy)
    convs = _convs(40)
    new = 24
    first = chat_generate(model, tok, convs, max_new_tokens=new, batch_size=16)
    said = Counter(t for texts in first for t in set(tok(texts[0], add_special_tokens=False)["input_ids"]))
    common = [t for t, k in said.most_common() if k < len(convs) * 3 // 4]
    assert common, "the redrawn policy says nothing in common across prompts"
    model.generation_config.eos_token_id = [tok.eos_token_id, common[0]]

    decode_linear.uninstall(model)  # the old evaluator: `generate` with torch's own products
    plain = [texts[0] for texts in chat_generate(model, tok, convs, max_new_tokens=new, batch_size=16)]
    decode_linear.install(model)  # what `load_for_inference` gives the evaluator on a CPU
    lengths = {len(tok(t, add_special_tokens=False)["input_ids"]) for t in plain}
    assert len(lengths) >= 4 and max(lengths) >= new - 1, "rows should end at many different steps"
    assert len(set(plain)) > len(convs) // 2
    for batch in (16, 64):
        assert greedy_chat(model, tok, convs, max_new_tokens=new, batch_size=batch) == plain


def test_progress_counts_each_batch_and_an_empty_list_answers_nothing(tiny_policy: Path) -> None:
    from meta_agent.inference import greedy_chat

    model, tok = _speaking_policy(tiny_policy)
    seen: list[int] = []
    out = greedy_chat(model, tok, _convs(7), max_new_tokens=3, batch_size=3, on_batch=seen.append)
    assert len(out) == 7 and seen == [3, 3, 1]
    assert greedy_chat(model, tok, [], max_new_tokens=3) == []


def test_one_new_token_is_one_token(tiny_policy: Path) -> None:
    from meta_agent.inference import chat_generate, greedy_chat

    model, tok = _speaking_policy(tiny_policy)
    convs = _convs(5)
    one = greedy_chat(model, tok, convs, max_new_tokens=1, batch_size=4)
    assert one == [t[0] for t in chat_generate(model, tok, convs, max_new_tokens=1, batch_size=4)]
    assert all(len(tok(t, add_special_tokens=False)["input_ids"]) <= 1 for t in one)
