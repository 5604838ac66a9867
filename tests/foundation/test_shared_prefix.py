"""The learner encodes each GRPO group's prompt once (harness/shared_prefix.py, issue #43).

What a user would notice if it were wrong: a policy that trains on other log-probs or gradients than TRL's
own path gives it, so the path must agree with TRL's plain forward, padding included, and step aside
wherever it cannot share.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness_repo"))

PAD = 0


def _policy(seed: int = 0) -> torch.nn.Module:
    """A tiny Llama with a LoRA adapter that has moved, TRL's fused log-prob head patched in as TRL does."""
    import trl.trainer.utils as trl_utils
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    base = LlamaForCausalLM(cfg)
    trl_utils.add_fused_lm_head(base, temperature=0.7, cast_lm_head_to_fp32=False, outputs=("log_probs", "entropy"))
    peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_" in name:
                p.add_(0.1 * torch.randn_like(p))
    return peft.train()


def _batch() -> tuple[torch.Tensor, torch.Tensor, int]:
    """Two prompts (the second left-padded) × 3 completions of up to 5 tokens (some right-padded), rows of
    the two groups interleaved as a shuffled batch would hold them."""
    prompts = [[PAD, PAD, 11, 12, 13, 14], [21, 22, 23, 24, 25, 26]]
    completions = [[30, 31, 32, 33, 34], [40, 41, PAD, PAD, PAD], [50, 51, 52, 53, PAD],
                   [60, 61, 62, 63, 64], [70, PAD, PAD, PAD, PAD], [80, 81, 82, PAD, PAD]]
    groups = [0, 1, 0, 1, 0, 1]
    ids = torch.tensor([prompts[g] + c for g, c in zip(groups, completions, strict=True)])
    mask = (ids != PAD).long()
    return ids, mask, 5


def _plain(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, keep: int):
    """TRL's own learner forward (GRPOTrainer._get_per_token_logps_and_entropies, one chunk)."""
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-keep] = -100
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -keep:], out.entropy[:, -keep:]


def _grads(model: torch.nn.Module, loss: torch.Tensor) -> list[torch.Tensor]:
    params = [p for p in model.parameters() if p.requires_grad]
    return list(torch.autograd.grad(loss, params))


def test_log_probs_entropies_and_gradients_are_the_plain_forwards() -> None:
    from harness.shared_prefix import shared_prefix_logps

    model = _policy()
    ids, mask, keep = _batch()
    want_lp, want_ent = _plain(model, ids, mask, keep)
    got = shared_prefix_logps(model, ids, mask, keep, compute_entropy=True, autocast=nullcontext())
    assert got is not None, "rows that share a prompt must take the shared path"
    got_lp, got_ent = got
    real = mask[:, -keep:].bool()
    assert got_lp.shape == want_lp.shape and got_ent is not None
    assert torch.allclose(got_lp[real], want_lp[real], atol=1e-5)
    assert torch.allclose(got_ent[real], want_ent[real], atol=1e-5)
    weights = torch.randn(want_lp.shape) * real  # a loss that weighs tokens differently, as advantages do
    got_grads = _grads(model, (got_lp * weights).sum())
    for want, have in zip(_grads(model, (want_lp * weights).sum()), got_grads, strict=True):
        assert torch.allclose(have, want, atol=1e-5, rtol=1e-4)
    assert any(g.abs().sum() > 0 for g in got_grads)


def test_the_prefix_is_encoded_once_per_group() -> None:
    from harness.shared_prefix import shared_prefix_logps

    model = _policy()
    ids, mask, keep = _batch()
    rows: list[tuple[int, int]] = []
    model.get_base_model().model.embed_tokens.register_forward_hook(
        lambda m, args, out: rows.append(tuple(args[0].shape)))
    shared_prefix_logps(model, ids, mask, keep, compute_entropy=False, autocast=nullcontext())
    prompt_len = ids.size(1) - keep
    assert rows == [(2, prompt_len - 1), (6, keep + 1)]  # two prefixes, then each row's own tokens


@pytest.mark.parametrize("case", ["distinct prompts", "one row", "no prompt to share"])
def test_it_steps_aside_where_nothing_is_shared(case: str) -> None:
    from harness.shared_prefix import prefix_groups, shared_prefix_logps

    ids, mask, keep = _batch()
    if case == "distinct prompts":
        ids = ids.clone()
        ids[:, 2] = torch.arange(ids.size(0)) + 1
        mask = (ids != PAD).long()
    elif case == "one row":
        ids, mask = ids[:1], mask[:1]
    else:
        keep = ids.size(1) - 1
    assert prefix_groups(ids, mask, keep) is None
    assert shared_prefix_logps(_policy(), ids, mask, keep, compute_entropy=True, autocast=nullcontext()) is None


def test_rows_with_the_same_ids_but_another_mask_are_not_grouped() -> None:
    from harness.shared_prefix import prefix_groups

    ids = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 8, 9], [5, 6, 7, 8, 9]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1]])
    groups = prefix_groups(ids, mask, 2)
    assert groups is not None
    first, inverse = groups
    assert inverse[0] == inverse[1] != inverse[2]
    assert sorted(first.tolist()) == [0, 2]


def test_gradient_checkpointing_takes_trls_path() -> None:
    from harness.shared_prefix import shared_prefix_logps

    model = _policy()
    model.get_base_model().activation_checkpointing_enable()
    ids, mask, keep = _batch()
    assert shared_prefix_logps(model, ids, mask, keep, compute_entropy=True, autocast=nullcontext()) is None
