"""The harness draws sampled tokens by inverse CDF on a CPU (harness/sampling.py, issue #43).

A user training with the merged sampler expects completions drawn from the policy's distribution, as
`torch.multinomial` draws them: never a word a processor removed (top-p, top-k), every other word at its
probability, bad input refused as torch refuses it, and torch itself untouched outside the sampler.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness_repo"))


def test_draws_follow_the_distribution() -> None:
    from harness.sampling import categorical

    probs = torch.tensor([[0.5, 0.0, 0.3, 0.2], [0.0, 0.1, 0.0, 0.9]])
    gen = torch.Generator().manual_seed(0)
    n = 40_000
    counts = torch.zeros_like(probs)
    for _ in range(n // 1000):
        draws = torch.cat([categorical(probs, 1, generator=gen) for _ in range(1000)], dim=1)
        counts += torch.nn.functional.one_hot(draws, probs.size(1)).sum(1).to(counts.dtype)
    freq = counts / n
    assert freq[probs == 0].sum() == 0  # removed words are never drawn
    # 5 standard errors of a binomial frequency at n = 40,000: at most 0.0125
    assert torch.allclose(freq, probs, atol=5 * (0.25 / n) ** 0.5)


def test_removed_words_at_either_end_and_unnormalised_rows() -> None:
    """Zero-probability words first and last (where a cumulative sum meets 0 and its total), and rows
    that do not sum to one (TRL and transformers hand over softmax output, but a caller need not)."""
    from harness.sampling import categorical

    probs = torch.zeros(64, 50)
    probs[:, 20] = 3.0
    probs[:, 21] = 1.0
    gen = torch.Generator().manual_seed(1)
    drawn = torch.cat([categorical(probs, 1, generator=gen) for _ in range(200)])
    assert set(drawn.unique().tolist()) == {20, 21}
    assert 0.65 < (drawn == 20).float().mean() < 0.85


def test_what_it_does_not_cover_is_torchs_own() -> None:
    from harness.sampling import categorical

    probs = torch.tensor([[0.2, 0.3, 0.5]])
    assert categorical(probs, 2).shape == (1, 2)  # two samples: torch.multinomial
    assert categorical(probs[0], 1).shape == (1,)  # a 1-D distribution: torch.multinomial
    for bad in (torch.tensor([[float("nan"), 0.5, 0.5]]), torch.tensor([[0.0, 0.0, 0.0]]),
                torch.tensor([[-0.1, 0.6, 0.5]]), torch.tensor([[float("inf"), 0.0, 1.0]])):
        with pytest.raises(RuntimeError):
            categorical(bad, 1)


def test_the_block_swaps_torch_multinomial_and_always_restores_it() -> None:
    from harness.sampling import categorical, fast_categorical

    real = torch.multinomial
    with fast_categorical():
        assert torch.multinomial is categorical
        with fast_categorical():
            assert torch.multinomial is categorical
        assert torch.multinomial is categorical
    assert torch.multinomial is real
    with pytest.raises(ValueError), fast_categorical():
        raise ValueError("a generation that fails")
    assert torch.multinomial is real
    with fast_categorical(enabled=False):
        assert torch.multinomial is real


def test_generate_samples_through_it_with_top_p() -> None:
    """transformers' sampling loop is what the harness wraps: its draws must come from here, and a
    top-p that leaves one word must give that word every time."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from harness.sampling import categorical, fast_categorical

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()
    ids = torch.tensor([[5, 9, 13], [7, 8, 60]])
    calls: list[tuple[int, ...]] = []

    def recording(probs: torch.Tensor, num_samples: int, *a: object, **k: object) -> torch.Tensor:
        calls.append(tuple(probs.shape))
        return categorical(probs, num_samples, *a, **k)  # type: ignore[arg-type]

    with torch.no_grad():
        greedy = model.generate(input_ids=ids, max_new_tokens=5, do_sample=False, pad_token_id=0)
        with fast_categorical():
            torch.multinomial = recording  # type: ignore[assignment]  # restored by the block
            tight = model.generate(input_ids=ids, max_new_tokens=5, do_sample=True, top_p=1e-9, top_k=0,
                                   pad_token_id=0)
    assert calls == [(2, 97)] * 5
    assert torch.equal(tight, greedy)  # top-p keeps only the likeliest word
