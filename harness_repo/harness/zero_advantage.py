"""Completions that carry no gradient go through the learner without autograd.

A GRPO group whose completions all earned the same reward has advantage 0 in every row, and a rollout a
filter weighted 0 has no token in the loss. Such a row adds exactly 0 to the loss and to every gradient
(its per-token loss is `-min(r·0, clip(r)·0)`, or masked out), yet TRL runs it through forward and
backward like any other. With a small policy that is most rows: in 8 steps of the math template on
SmolLM2, 4 steps had no group with a reward spread, and a SWE demo step has none at all.

Here the learner's forward (`HarnessGRPOTrainer._get_per_token_logps_and_entropies`, called by TRL's
`_compute_loss`) runs these "still" rows under `torch.no_grad()` and the others as before, and hands TRL
both, in the batch's order: TRL's loss, normalizers and logged metrics (entropy, clip ratios) see every
row as they did, the still rows' values are only detached, and backward runs through the rows that
move. A micro-batch with no moving row adds a zero loss wired to every trainable weight, so the optimizer
steps on zero gradients as it would have (an optimizer skips a weight whose gradient is None, and Adam's
moments would then not decay).

Only where that is exact: no KL term (`beta` > 0 gives every row a gradient), no entropy bonus (the same),
no router auxiliary loss, a loss type known to multiply each row's loss by its advantage, and text inputs
of known fields. Otherwise every row runs with autograd, as in TRL.
"""

from __future__ import annotations

from typing import Any

import torch

ROW_FIELDS = frozenset({
    "prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "old_per_token_logps",
    "importance_sampling_ratio", "sampling_per_token_logps", "ref_per_token_logps", "tool_mask",
    "num_items_in_batch",
})
"""The inputs of TRL's `_compute_loss` for text; any other (images, a field a later TRL adds) runs every row."""

ADVANTAGE_TIMES_LOSS = frozenset({"grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"})
"""TRL's loss types whose per-token loss is 0 with its gradient where the advantage is 0."""


def still_rows(trainer: Any, inputs: dict[str, Any]) -> torch.Tensor | None:
    """Which rows of this micro-batch cannot move the weights (a bool per row), or None where running them
    without autograd would not be exact."""
    if (trainer.beta != 0.0 or trainer.aux_loss_enabled or getattr(trainer, "_entropy_bonus_enabled", True)
            or not trainer.model.training or trainer.loss_type not in ADVANTAGE_TIMES_LOSS
            or set(inputs) - ROW_FIELDS):
        return None
    mask = inputs["completion_mask"]
    if "tool_mask" in inputs:
        mask = mask * inputs["tool_mask"]
    advantages = inputs["advantages"]
    flat = advantages == 0 if advantages.dim() == 1 else (advantages == 0).all(dim=1)
    return flat | (mask.sum(dim=1) == 0)


def split_forward(forward: Any, still: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  *args: Any, **kwargs: Any) -> Any:
    """`forward(ids, mask, ...)` -> (log-probs, entropies or None, aux) of the whole batch, from the moving
    rows with autograd and the still rows without, put back in the batch's order."""
    still = still.to(input_ids.device)
    moving, idle = (~still).nonzero().squeeze(1), still.nonzero().squeeze(1)
    parts = []
    if len(moving):
        parts.append(forward(input_ids[moving], attention_mask[moving], *args, **kwargs))
    with torch.no_grad():
        parts.append(forward(input_ids[idle], attention_mask[idle], *args, **kwargs))
    back = torch.cat([moving, idle]).argsort()
    logps = torch.cat([p[0] for p in parts]).index_select(0, back)
    entropies = None if parts[0][1] is None else torch.cat([p[1] for p in parts]).index_select(0, back)
    return logps, entropies, None


def zero_loss(model: Any) -> torch.Tensor:
    """A loss of 0 whose gradient reaches every trainable weight as zeros (not None)."""
    weights = [p for p in model.parameters() if p.requires_grad]
    return sum((p.sum() * 0.0 for p in weights), torch.zeros((), device=weights[0].device if weights else None))
