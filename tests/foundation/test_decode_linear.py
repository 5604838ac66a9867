"""Inference products on oneDNN-packed weights, or weight-first (meta_agent/decode_linear.py, and the harness's own copy
for its sampler): the same numbers up to float rounding, the same greedy tokens, and nothing else changed:
many rows, a learner's gradients, bf16 weights and the weights themselves go as before."""

from __future__ import annotations

import pickle
import sys
from copy import deepcopy
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness_repo"))

from harness import decode_linear as harness_copy
from meta_agent import decode_linear as evaluator_copy

NO_ONEDNN = ("this torch was built without oneDNN (torch.backends.mkldnn.is_available() is False, or its "
             "packed-linear ops are missing); the no-oneDNN arm covers what runs instead")

COPIES = [pytest.param(evaluator_copy, id="evaluator"), pytest.param(harness_copy, id="harness")]


def _tiny_llama(seed: int = 0) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=301, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # larger weights than the initialiser's, so greedy tokens depend on the prompt
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.2)
    return model


@pytest.mark.parametrize("copy", COPIES)
@pytest.mark.parametrize("rows", [1, 2, 4, 8, 64])
def test_few_rows_give_the_products_of_f_linear(copy: ModuleType, rows: int) -> None:
    layer = nn.Linear(96, 200, bias=True)
    x = torch.randn(rows, 1, 96)
    want = layer(x)
    assert copy.install(layer) == 1
    with torch.no_grad():
        got = layer(x)
    assert got.shape == want.shape and got.is_contiguous()
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("copy", COPIES)
@pytest.mark.parametrize("onednn", [True, False], ids=["onednn", "no-onednn"])
def test_many_rows_bf16_and_a_learner_keep_torchs_own_product(copy: ModuleType, onednn: bool,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Which product ran is counted, not inferred from values: past 16 rows the forms give the same bits.
    With oneDNN every row count of an fp32 inference product takes the packed weight; without it (a torch
    built without), a few rows go weight-first and many take `F.linear`."""
    if onednn and not copy._onednn():
        pytest.skip(NO_ONEDNN)
    monkeypatch.setattr(copy, "_onednn", lambda: onednn)
    calls: list[int] = []
    linear = nn.functional.linear
    monkeypatch.setattr(nn.functional, "linear", lambda x, w, b=None: calls.append(len(x)) or linear(x, w, b))
    layer = nn.Linear(32, 48)
    copy.install(layer)
    few, many = torch.randn(3, 32), torch.randn(copy.SKINNY_ROWS + 1, 32)
    with torch.no_grad():
        layer(few)
        assert calls == [], "a few rows at inference go weight-first or packed"
        assert torch.allclose(layer(many), linear(many, layer.weight, layer.bias), atol=1e-5)
    assert calls == ([] if onednn else [copy.SKINNY_ROWS + 1])
    calls.clear()
    loss = layer(few).square().sum()  # grad enabled, weight trainable: the learner's path
    loss.backward()
    assert layer.weight.grad is not None and layer.weight.grad.abs().sum() > 0
    half = nn.Linear(32, 48).to(torch.bfloat16)
    copy.install(half)
    with torch.no_grad():
        half(few.to(torch.bfloat16))
    assert calls == [3, 3]


@pytest.mark.parametrize("copy", COPIES)
def test_a_layer_whose_packed_product_fails_keeps_the_weight_first_one(copy: ModuleType,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """oneDNN may refuse a CPU or a shape at run time; the product must not fail with it."""
    if not copy._onednn():
        pytest.skip(NO_ONEDNN)
    tries: list[int] = []

    def refuse(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        tries.append(len(x))
        raise RuntimeError("could not create a primitive")

    monkeypatch.setattr(copy, "_on_packed", refuse)
    layer = nn.Linear(32, 48)
    copy.install(layer)
    x = torch.randn(6, 32)
    with torch.no_grad():
        for _ in range(3):
            assert torch.allclose(layer(x), nn.functional.linear(x, layer.weight, layer.bias), atol=1e-5)
    assert tries == [6], "a layer oneDNN refused is not tried again"


@pytest.mark.parametrize("copy", COPIES)
def test_a_sandbox_cap_with_no_room_for_a_second_copy_keeps_weights_unpacked(copy: ModuleType,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's complaint this answers: "a policy that trained under the 12 GB cap is now killed for memory".
    A packed copy doubles the linear weights; inside a sandbox (whose cgroup limit a job cannot see) the cap
    comes from the sandbox's variable, and a weight is packed only where the cap leaves the reserve after it."""
    if not copy._onednn():
        pytest.skip(NO_ONEDNN)
    resident = copy._status_bytes("VmRSS")
    assert resident is not None and resident > 0
    monkeypatch.setenv(copy.MEMORY_ENV, str(resident // (1 << 20) + 256))  # 256 MB above what this process holds
    assert copy.room() <= 257 << 20
    layer = nn.Linear(64, 96)
    copy.install(layer)
    x = torch.randn(5, 64)
    with torch.no_grad():
        assert torch.allclose(layer(x), nn.functional.linear(x, layer.weight, layer.bias), atol=1e-5)
    assert copy._PACKED[layer][1] is None, "packed although the cap leaves no reserve"
    for junk in ("not a number", "inf", "nan"):  # ignored, as if unset: the machine's memory decides
        monkeypatch.setenv(copy.MEMORY_ENV, junk)
        assert copy.room() > 257 << 20, f"{junk!r} was read as a cap"
    with torch.no_grad():
        assert torch.allclose(layer(x), nn.functional.linear(x, layer.weight, layer.bias), atol=1e-5)
        assert copy._PACKED[layer][1] is None, "the room is asked again only when the weight changes"
        layer.weight.mul_(0.5)
        assert torch.allclose(layer(x), nn.functional.linear(x, layer.weight, layer.bias), atol=1e-5)
    if copy.room() - layer.weight.nbytes >= copy.RESERVE_BYTES:  # this machine has the room
        assert copy._PACKED[layer][1] is not None, "not packed after the weight changed with room to spare"


@pytest.mark.parametrize("copy", COPIES)
def test_a_packed_weight_follows_every_write_to_the_weight(copy: ModuleType) -> None:
    """A user's complaint this answers: "my sampler kept generating with the policy of step 1". The merged
    sampler refreshes its weights in place before each generation; a packed copy must not go stale."""
    layer = nn.Linear(64, 96)
    copy.install(layer)
    x = torch.randn(5, 64)
    with torch.no_grad():
        layer(x)
        layer.weight.copy_(torch.randn(96, 64))  # the sampler's refresh: in place
        assert torch.allclose(layer(x), nn.functional.linear(x, layer.weight, layer.bias), atol=1e-5)
        layer.weight.mul_(0.5)
        assert torch.allclose(layer(x), nn.functional.linear(x, layer.weight, layer.bias), atol=1e-5)
    layer.weight = nn.Parameter(torch.randn(96, 64))  # a new tensor (a load, a move)
    with torch.no_grad():
        assert torch.allclose(layer(x), nn.functional.linear(x, layer.weight, layer.bias), atol=1e-5)
    with torch.inference_mode():
        frozen = nn.Linear(64, 96)  # an inference tensor keeps no version counter: never packed, still right
    copy.install(frozen)
    with torch.inference_mode():
        assert torch.allclose(frozen(x), nn.functional.linear(x, frozen.weight, frozen.bias), atol=1e-5)
    twin = deepcopy(layer)  # a packed weight cannot be copied: it is kept beside the layer, not in it
    with torch.no_grad():
        assert torch.allclose(twin(x), layer(x), atol=1e-5)
    pickle.dumps(layer)
    copy.uninstall(layer)
    assert layer not in copy._PACKED


@pytest.mark.parametrize("copy", COPIES)
def test_greedy_tokens_differ_only_at_a_near_tie_and_weights_and_uninstall_are_untouched(copy: ModuleType) -> None:
    """The two forms sum in another order, so a greedy token may flip only where its two best words are within
    float rounding of each other; before that every step's logits agree to rounding."""
    model = _tiny_llama()
    ids = torch.randint(3, 300, (4, 12), generator=torch.Generator().manual_seed(1))
    weights = {k: v.clone() for k, v in model.state_dict().items()}

    def greedy() -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=24,
                                 do_sample=False, pad_token_id=0, output_logits=True, return_dict_in_generate=True)
        return out.sequences[:, 12:], torch.stack(out.logits, 1)

    plain, plain_logits = greedy()
    linears = sum(type(m) is nn.Linear for m in model.modules())
    assert copy.install(model) == linears
    fast, fast_logits = greedy()
    assert len(set(map(tuple, plain.tolist()))) > 1, "prompts should get different answers"
    for row in range(len(ids)):
        differ = (plain[row] != fast[row]).nonzero()
        upto = int(differ[0]) if len(differ) else plain.shape[1]
        same_input = upto + 1 if len(differ) else upto  # steps whose inputs were still the same tokens
        assert torch.allclose(fast_logits[row, :same_input], plain_logits[row, :same_input], atol=1e-4)
        if len(differ):
            top2 = plain_logits[row, upto].topk(2).values
            assert float(top2[0] - top2[1]) < 1e-4, f"row {row} flipped at step {upto} without a near-tie"
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    copy.uninstall(model)
    assert not any("forward" in m.__dict__ for m in model.modules())
    assert torch.equal(greedy()[0], plain)


def test_the_sealed_evaluator_loads_a_policy_with_it(tiny_policy: Path) -> None:
    from meta_agent.policy import load_for_inference

    model, _ = load_for_inference(tiny_policy)
    assert any(type(m) is nn.Linear and "forward" in m.__dict__ for m in model.modules())
