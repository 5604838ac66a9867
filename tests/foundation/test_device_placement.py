"""Tensors the harness builds from Python lists go where the model is.

On a GPU both of these stopped the first training step ("Expected all tensors to be on the same device",
found by bench/gpu_harness_step.py on an H200). This machine has no second device, so the test puts TRL's
tensors on torch's `meta` device: a tensor made on the CPU beside them raises the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness_repo"))


def test_the_filters_weights_are_made_on_the_advantages_device() -> None:
    from harness.trainer import weight_advantages

    out = {"advantages": torch.zeros(4, device="meta"), "completion_mask": torch.ones(4, 3, device="meta")}
    weights = weight_advantages(out, [1.0, 0.0, 0.5, 1.0])
    assert weights.device.type == "meta" and out["advantages"].device.type == "meta"
    assert out["num_items_in_batch"].device.type == "meta"


def test_the_swe_agents_turn_inputs_are_made_on_the_models_device() -> None:
    from harness.swe.turn_cache import left_padded

    ids, mask = left_padded([[5, 6, 7], [8]], pad=0, device=torch.device("meta"))
    assert ids.device.type == mask.device.type == "meta" and tuple(ids.shape) == (2, 3)
    cpu_ids, cpu_mask = left_padded([[5, 6, 7], [8]], pad=0, device="cpu")
    assert cpu_ids.tolist() == [[5, 6, 7], [0, 0, 8]] and cpu_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
