"""Completions that cannot move the weights go through the learner without autograd
(harness/zero_advantage.py, issue #43).

What a user would notice if it were wrong: a policy that trains differently from TRL's own step, or a step
log that reads differently. So the loss, every gradient and the logged entropy and clip ratios must equal
TRL's, for each loss type the harness offers; the still rows must really run without autograd; and a step
where nothing can move must still step the optimizer on zero gradients as TRL's does."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness_repo"))

pytestmark = pytest.mark.slow  # builds a trainer on a model: not in `make test-fast`


@pytest.fixture(scope="module")
def trainer(tiny_policy: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from datasets import Dataset

    from harness.config import HarnessConfig
    from harness.domain import load_domain
    from harness.io import JsonlAppender
    from harness.policy import load_policy
    from harness.train import grpo_args
    from harness.trainer import HarnessGRPOTrainer, HarnessScorer

    out = tmp_path_factory.mktemp("trainer")
    cfg = HarnessConfig(domain="math")
    domain = load_domain("math")
    tasks = [{"id": f"t{i}", "prompt": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(2)]
    model, tokenizer, _, peft_config = load_policy(tiny_policy, cfg)
    trainer = HarnessGRPOTrainer(
        model=model, args=grpo_args(cfg, 1, 0, str(out)), processing_class=tokenizer, peft_config=peft_config,
        train_dataset=Dataset.from_list([{"prompt": domain.build_messages(t), "task_id": t["id"]} for t in tasks]),
        scorer=HarnessScorer(domain, cfg, {t["id"]: t for t in tasks}),
        rollouts_out=JsonlAppender(out / "rollouts.jsonl"))
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # what Trainer's loop sets before each micro-batch
    with torch.no_grad():  # an adapter that has moved, so every row has its own gradient
        draw = torch.Generator().manual_seed(0)
        for name, p in trainer.model.named_parameters():
            if "lora_" in name:
                p.add_(0.05 * torch.randn(p.shape, generator=draw))
    yield trainer
    # the trainer set accelerate's process-wide state (no mixed precision); a later test in this worker that
    # builds its own Accelerator (bf16) would be refused
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)


def _inputs(advantages: list[float], dropped: tuple[int, ...] = ()) -> dict[str, torch.Tensor]:
    """Two prompts (the second left-padded) × 4 completions of up to 6 tokens, some right-padded; rows in
    `dropped` a filter weighted 0 (no token in the loss, as harness/trainer.py's weight_advantages leaves them)."""
    draw = torch.Generator().manual_seed(1)
    prompts = torch.randint(5, 90, (2, 7), generator=draw)
    prompt_mask = torch.ones_like(prompts)
    prompt_mask[1, :2] = 0
    rows = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    completion_ids = torch.randint(5, 90, (8, 6), generator=draw)
    completion_mask = torch.ones_like(completion_ids)
    for row, length in enumerate([6, 3, 5, 1, 6, 2, 4, 6]):
        completion_mask[row, length:] = 0
    for row in dropped:
        completion_mask[row] = 0
    return {"prompt_ids": prompts[rows], "prompt_mask": prompt_mask[rows], "completion_ids": completion_ids,
            "completion_mask": completion_mask, "advantages": torch.tensor(advantages),
            "num_items_in_batch": completion_mask.sum()}


def _step(trainer: Any, inputs: dict[str, torch.Tensor],
          skip: bool) -> tuple[float, dict[str, Any], list[tuple[int, bool]], dict[str, float]]:
    """The loss, each trainable weight's gradient, each learner forward's (rows, with autograd), and the
    metrics TRL logged."""
    seen: list[tuple[int, bool]] = []
    forward = type(trainer)._get_per_token_logps_and_entropies

    def spy(self: Any, model: Any, input_ids: torch.Tensor, *a: Any, **k: Any) -> Any:
        seen.append((int(input_ids.size(0)), torch.is_grad_enabled()))
        return forward(self, model, input_ids, *a, **k)

    trainer.skip_zero_advantage = skip
    trainer.model.zero_grad(set_to_none=True)
    trainer._metrics["train"].clear()
    trainer._get_per_token_logps_and_entropies = spy.__get__(trainer)
    try:
        loss = trainer._compute_loss(trainer.model, inputs)
        loss.backward()
    finally:
        del trainer._get_per_token_logps_and_entropies
    grads = {n: p.grad for n, p in trainer.model.named_parameters() if p.requires_grad}
    logged = {k: v[-1] for k, v in trainer._metrics["train"].items()}
    return float(loss.detach()), grads, seen, logged


@pytest.mark.parametrize("loss_type", ["dapo", "grpo", "dr_grpo", "bnpo"])
def test_the_update_and_the_log_are_trls_with_only_the_moving_rows_under_autograd(trainer: Any,
                                                                                   loss_type: str) -> None:
    """Group 1 all the same reward (advantage 0), group 2 spread out, one of its rows filtered out: TRL's
    loss, gradients and logged metrics, with 3 of the 8 rows through autograd."""
    trainer.loss_type = loss_type
    inputs = _inputs([0.0, 0.0, 0.0, 0.0, 1.5, -0.5, -0.5, -0.5], dropped=(7,))
    whole, whole_grads, whole_rows, whole_log = _step(trainer, inputs, skip=False)
    part, part_grads, part_rows, part_log = _step(trainer, inputs, skip=True)
    assert whole_rows == [(8, True)]
    assert part_rows == [(8, True), (3, True), (5, False)]
    assert part == pytest.approx(whole, rel=1e-5, abs=1e-7)
    assert whole != 0.0
    assert set(part_log) == set(whole_log) and "entropy" in whole_log
    for key, value in whole_log.items():
        assert part_log[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key
    moved = 0
    for name, g in whole_grads.items():
        assert part_grads[name] is not None, name
        torch.testing.assert_close(part_grads[name], g, rtol=1e-4, atol=1e-7)
        moved += int(g.abs().sum() > 0)
    assert moved > len(whole_grads) // 2


def test_a_batch_where_nothing_moves_has_no_autograd_and_gives_zero_gradients(trainer: Any) -> None:
    """Not None: the optimizer steps on every weight as after TRL's zero loss (Adam's moments decay). The
    step still logs its entropy: a policy whose every group scores the same is where a collapse shows."""
    trainer.loss_type = "dapo"
    inputs = _inputs([0.0] * 8)
    whole, whole_grads, _, whole_log = _step(trainer, inputs, skip=False)
    part, part_grads, part_rows, part_log = _step(trainer, inputs, skip=True)
    assert part_rows == [(8, True), (8, False)]
    assert part == whole == 0.0
    assert part_log["entropy"] == pytest.approx(whole_log["entropy"], rel=1e-5)
    for name, g in whole_grads.items():
        assert part_grads[name] is not None and torch.equal(part_grads[name], torch.zeros_like(g)), name


def test_every_row_keeps_autograd_where_a_still_row_would_have_a_gradient(trainer: Any) -> None:
    """A KL term, an entropy bonus, a router loss, an unknown loss type or an image input give a row of
    advantage 0 a gradient (or might)."""
    from harness.zero_advantage import still_rows

    inputs = _inputs([0.0, 0.0, 0.0, 0.0, 1.5, -0.5, -0.5, -0.5], dropped=(7,))
    trainer.loss_type = "dapo"
    assert still_rows(trainer, inputs).tolist() == [True] * 4 + [False] * 3 + [True]
    for attr, value in [("beta", 0.04), ("_entropy_bonus_enabled", True),
                        ("loss_type", "a-later-loss"), ("aux_loss_enabled", True)]:
        before = getattr(trainer, attr)
        setattr(trainer, attr, value)
        try:
            assert still_rows(trainer, inputs) is None, attr
        finally:
            setattr(trainer, attr, before)
    assert still_rows(trainer, {**inputs, "pixel_values": torch.zeros(8, 3)}) is None
    trainer.model.eval()
    try:
        assert still_rows(trainer, inputs) is None
    finally:
        trainer.model.train()
