"""The sealed evaluator decodes from weights laid out for a few rows at a time (meta_agent/decode_layout.py).

A user would notice if the evaluator's answers changed with the layout, if a tied head came apart from its
embedding, or if the layout were applied where it was not asked for."""

from __future__ import annotations

import torch

from meta_agent.decode_layout import transpose_linear_storage
from meta_agent.policy import load_for_inference, tiny_policy


def _tiny_llama(tied: bool) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=tied)
    return LlamaForCausalLM(cfg).eval()


IDS = torch.tensor([[5, 9, 13, 2, 40, 41], [7, 7, 8, 60, 61, 62]])


def _decode(model: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        return (model(input_ids=IDS).logits,
                model.generate(input_ids=IDS, max_new_tokens=8, do_sample=False, pad_token_id=0))


def test_same_logits_and_greedy_tokens_and_ties_kept() -> None:
    for tied in (True, False):
        model = _tiny_llama(tied)
        want_logits, want_tokens = _decode(model)
        linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        assert transpose_linear_storage(model) == len(linears)
        assert all(m.weight.t().is_contiguous() and not m.weight.is_contiguous() for m in linears)
        head, embed = model.get_output_embeddings().weight, model.get_input_embeddings().weight
        assert (head is embed) == tied
        got_logits, got_tokens = _decode(model)
        assert torch.allclose(got_logits, want_logits, atol=1e-5)
        assert torch.equal(got_tokens, want_tokens)
        assert transpose_linear_storage(model) == 0  # already laid out: nothing moves twice


def test_the_evaluator_loads_the_layout_on_a_cpu_and_not_when_told_not_to() -> None:
    model, _ = load_for_inference(tiny_policy())
    plain, _ = load_for_inference(tiny_policy(), decode_layout=False)
    head = model.get_output_embeddings().weight
    assert head.t().is_contiguous() and not head.is_contiguous()
    assert plain.get_output_embeddings().weight.is_contiguous()
    ids = IDS % model.config.vocab_size
    with torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, plain(input_ids=ids).logits, atol=1e-5)


def test_a_laid_out_model_is_written_and_read_back_after_row_major(tmp_path) -> None:
    from transformers import LlamaForCausalLM

    from meta_agent.decode_layout import row_major

    model = _tiny_llama(tied=True)
    want, _ = _decode(model)
    transpose_linear_storage(model)
    assert row_major(model) > 0
    assert all(p.is_contiguous() for p in model.parameters())
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    model.save_pretrained(str(tmp_path), safe_serialization=True)
    again = LlamaForCausalLM.from_pretrained(str(tmp_path)).eval()
    assert torch.allclose(_decode(again)[0], want, atol=1e-5)
