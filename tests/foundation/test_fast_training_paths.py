"""The harness's two training speed-ups keep what the policy computes (issue #43).

- `rl.generation: merged` samples with a LoRA-merged copy of the policy (harness/merged_policy.py). The copy
  must compute what the trained policy computes at the moment it samples, follow every update, and be
  a real copy even when accelerate has wrapped the policy's forward in autocast.
- TRL's fused log-prob head projects only completion rows (harness.lm_head.score_completion_rows_only):
  the log-probs and entropies must be those of the full projection, and the warm start's SFT steps
  must learn what they learned with every row projected.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness_repo"))


def _tiny_llama(seed: int = 0) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()


def _lora(model: torch.nn.Module) -> torch.nn.Module:
    from peft import LoraConfig, get_peft_model

    peft = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    _train_step(peft, 0.05)
    return peft


@torch.no_grad()
def _train_step(model: torch.nn.Module, scale: float) -> None:
    """What an optimizer step does to a LoRA policy: its adapter weights move (B starts at zero)."""
    for name, p in model.named_parameters():
        if "lora_" in name:
            p.add_(scale * torch.randn_like(p))


def _logits(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits.float()


IDS = torch.tensor([[5, 9, 13, 2, 40, 41], [7, 7, 8, 60, 61, 62]])


def test_the_merged_copy_computes_what_the_lora_policy_computes_and_follows_its_updates() -> None:
    from harness.merged_policy import MergedPolicy

    policy = _lora(_tiny_llama())
    merged = MergedPolicy(policy, torch.float32)
    assert torch.allclose(_logits(merged.sync(), IDS), _logits(policy, IDS), atol=1e-5)
    _train_step(policy, 0.5)  # a training step the copy has not seen yet
    stale = _logits(merged.model, IDS)
    assert not torch.allclose(stale, _logits(policy, IDS), atol=1e-3), "the copy must be a copy, not the policy"
    assert torch.allclose(_logits(merged.sync(), IDS), _logits(policy, IDS), atol=1e-5)


def test_a_full_finetune_policy_is_followed_too() -> None:
    from harness.merged_policy import MergedPolicy

    policy = _tiny_llama()
    merged = MergedPolicy(policy, torch.float32)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.1 * torch.randn_like(p))
    assert torch.allclose(_logits(merged.sync(), IDS), _logits(policy, IDS), atol=1e-5)


def test_the_copy_runs_itself_when_trl_and_accelerate_have_wrapped_the_policys_forward() -> None:
    """TRL's fused log-prob head (on the base model under the adapter) and accelerate's mixed precision (on
    the prepared model) each replace a module's `forward` with a closure over the ORIGINAL module; a deep
    copy that kept them ran the trained model (the first version of this path did: same samples, no
    speed-up)."""
    import trl.trainer.utils as trl_utils
    from accelerate import Accelerator

    from harness.merged_policy import MergedPolicy

    peft = _lora(_tiny_llama())
    trl_utils.add_fused_lm_head(peft.get_base_model(), temperature=1.0, cast_lm_head_to_fp32=False,
                                outputs=("log_probs", "entropy"))
    policy = Accelerator(cpu=True, mixed_precision="bf16").prepare(peft)
    assert "forward" in policy.__dict__ and "forward" in peft.get_base_model().__dict__  # what this is about
    merged = MergedPolicy(policy, torch.bfloat16)
    copy = merged.sync()
    assert "forward" not in copy.__dict__
    assert next(copy.parameters()).dtype == torch.bfloat16
    before = _logits(copy, IDS)
    _train_step(policy, 5.0)
    assert torch.equal(_logits(copy, IDS), before), "the unsynced copy moved with the policy: it runs the policy"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = _logits(policy, IDS)
    got = _logits(merged.sync(), IDS)
    assert (got - want).abs().max() < 0.1 * want.abs().max()  # bf16 weights vs bf16 autocast: close, not equal


def test_the_merged_copy_samples_a_policys_completion() -> None:
    from harness.merged_policy import MergedPolicy

    policy = _lora(_tiny_llama())
    merged = MergedPolicy(policy, torch.float32).sync()
    with torch.no_grad():
        want = policy.generate(input_ids=IDS, max_new_tokens=6, do_sample=False, pad_token_id=0)
        got = merged.generate(input_ids=IDS, max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert torch.equal(got, want)


@pytest.fixture
def fused_head(monkeypatch: pytest.MonkeyPatch):
    """TRL's fused log-prob head on a tiny model, with the rows each call projects recorded."""
    import trl.trainer.utils as trl_utils

    rows: list[int] = []
    real = trl_utils._ChunkedLogProbFunction

    class Recording:
        @staticmethod
        def apply(hidden: torch.Tensor, *a: object) -> object:
            rows.append(hidden.shape[0])
            return real.apply(hidden, *a)

    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", Recording)
    from trl.kernels import chunked_logprob

    # TRL's own rule (the module it is imported from), whatever an earlier test in this process left;
    # restored after the test
    monkeypatch.setattr(trl_utils, "_use_triton", chunked_logprob._use_triton)
    model = _tiny_llama()
    trl_utils.add_fused_lm_head(model, temperature=1.0, cast_lm_head_to_fp32=False, outputs=("log_probs", "entropy"))
    labels = IDS.clone()
    labels[:, :4] = -100  # a 4-token prompt, 2 completion tokens per row
    labels[1, 5] = -100  # and one padded position

    def run() -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            out = model(input_ids=IDS, labels=labels, fused_lm_head=True)
        keep = labels[:, 1:] != -100
        return out.log_probs[keep], out.entropy[keep]

    return run, rows


def test_the_log_prob_head_projects_only_completion_rows_with_the_same_results(fused_head) -> None:
    from harness.lm_head import score_completion_rows_only

    run, rows = fused_head
    full_logps, full_entropy = run()
    assert rows == [IDS.shape[0] * (IDS.shape[1] - 1)]  # TRL on a CPU: every position
    score_completion_rows_only()
    logps, entropy = run()
    assert rows[-1] == 3  # the three completion tokens, nothing else
    assert torch.allclose(logps, full_logps, atol=1e-5) and torch.allclose(entropy, full_entropy, atol=1e-5)


def test_the_warm_starts_loss_projects_only_reply_rows_and_learns_the_same(tiny_policy: Path, tmp_path: Path,
                                                                          fused_head) -> None:
    """A SWE demonstration is mostly statement and command output, which its loss masks out; TRL on a CPU
    still projected all of it onto the vocabulary, forward and backward (0.6x the step without, SmolLM2).
    The harness's warm start (harness/warm_start.py `_trainer`) projects the reply rows only, and must
    take the same steps: the same losses and the same adapter after them."""
    import yaml
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer

    from harness.config import HarnessConfig
    from harness.warm_start import _trainer, sft_args

    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "harness_repo/configs/swe.yaml").read_text())
    raw["warm_start"].update({"steps": 2, "batch_size": 1, "learning_rate": 1e-2})
    cfg = HarnessConfig.model_validate(raw)
    examples = [{"input_ids": [(7 * i + 3 * k) % 500 + 10 for i in range(24)],
                 "completion_mask": [0] * 10 + [1] * 4 + [0] * 6 + [1] * 4} for k in range(2)]
    tok = AutoTokenizer.from_pretrained(tiny_policy)
    _, rows = fused_head

    def train(build) -> tuple[list[float], dict[str, torch.Tensor]]:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(tiny_policy)
        lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
        trainer = build(model, lora)
        trainer.train()
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        return losses, {k: v.detach().clone() for k, v in trainer.model.named_parameters() if "lora_" in k}

    from datasets import Dataset

    full_loss, full_weights = train(lambda m, lora: SFTTrainer(  # TRL's own CPU path: every row projected
        model=m, args=sft_args(cfg, 0, str(tmp_path)), train_dataset=Dataset.from_list(examples),
        processing_class=tok, peft_config=lora))
    assert set(rows) == {23}  # every position but the last, in each of the two steps
    rows.clear()
    loss, weights = train(lambda m, lora: _trainer(m, tok, lora, cfg, examples, 0, str(tmp_path)))
    assert rows and set(rows) == {8}  # the two replies' 4 + 4 tokens, nothing else
    assert len(loss) == 2 and loss == pytest.approx(full_loss, rel=1e-5)
    assert weights.keys() == full_weights.keys() and weights
    for name, w in weights.items():
        assert torch.allclose(w, full_weights[name], atol=1e-6), name
    assert any(not torch.equal(w, torch.zeros_like(w)) for n, w in weights.items() if "lora_B" in n)  # it learned


def test_the_merged_copys_head_is_handed_contiguous_rows() -> None:
    """At the first decode step the model hands its head a strided view (the last position of each row);
    torch's CPU matmul then broadcast the head's weight to every row, about 1 s per SmolLM2 generation."""
    from harness.merged_policy import MergedPolicy

    merged = MergedPolicy(_lora(_tiny_llama()), torch.float32).sync()
    seen: list[bool] = []
    merged.get_output_embeddings().register_forward_hook(lambda m, args, out: seen.append(args[0].is_contiguous()))
    with torch.no_grad():
        merged.generate(input_ids=IDS, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert len(seen) == 3 and all(seen)


def test_the_merged_copy_decodes_weight_first_with_ties_kept() -> None:
    """On a CPU the copy's linear layers take the inference product (harness/decode_linear.py: oneDNN-packed
    weights, or weight-first) with the weights left as they are, and a tied head stays the embedding's
    weight, so a full fine-tune's update to the embedding reaches the head that samples."""
    from harness.merged_policy import MergedPolicy

    merged = MergedPolicy(_tiny_llama(), torch.float32).model
    linears = [m for m in merged.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all("forward" in m.__dict__ and m.weight.is_contiguous() for m in linears)
    assert merged.get_output_embeddings().weight is merged.get_input_embeddings().weight
    policy = _tiny_llama()
    sampler = MergedPolicy(policy, torch.float32)
    ids = torch.randint(3, 90, (2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        sampler.sync()(input_ids=ids)  # the head's weight is packed at this first product
        policy.get_input_embeddings().weight.add_(0.3 * torch.randn_like(policy.get_input_embeddings().weight))
        got = sampler.sync()(input_ids=ids).logits  # the update, through the tied embedding, reaches the head
        want = policy(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-4)
