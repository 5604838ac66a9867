"""Linear layers that multiply a few rows at the rate memory allows: what a decode step is made of.

A decode step multiplies a handful of rows (one per sequence) by every weight of the model, so it is
bound by reading the weights. On a CPU, torch's `F.linear(x, W)` of 2-8 rows by a (out, in) weight read
it at 8 GB/s on the project's 2-core EPYC (MKL, AVX2) and the LM head at 5 GB/s, where the same product
written weight-first, `(W @ x.T).T`, read at 19-20 GB/s, the machine's memory bandwidth: SmolLM2-135M's
linear layers at 4 rows went from 51 ms to 21 ms a token, its head from 19 ms to 5.5 ms. It was never
slower at any row count tried (1 to 2048), and from 16 rows on it gave bitwise the same values; at 2-8
rows values differ by float rounding (summation order), so a sampled or greedy token can flip where two
words are within rounding of each other. `bench/decode_linear.py` measures both forms on this machine.

The sealed evaluator's copy (`policy.load_for_inference` installs it on a CPU); the harness template has its
own (harness/decode_linear.py) for its sampler, as harness code runs without meta-agent's package.
Only for inference (the learner keeps `nn.Linear`; its rows are many), and only fp32 weights on a CPU:
bf16 (an AMX CPU's sampler) and GPUs were not measured, so they keep `F.linear`.
"""

from __future__ import annotations

import types
from typing import Any

import torch
from torch import nn

SKINNY_ROWS = 64
"""Products of at most this many rows go weight-first; more (a prefill) take `F.linear`, which is as fast
there."""


def _forward(self: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    rows = x.numel() // max(1, x.shape[-1])
    w = self.weight
    if rows > SKINNY_ROWS or w.device.type != "cpu" or w.dtype != torch.float32 or (
            torch.is_grad_enabled() and w.requires_grad):
        return nn.functional.linear(x, self.weight, self.bias)
    out = torch.mm(w, x.reshape(rows, x.shape[-1]).t()).t()
    if self.bias is not None:
        out = out + self.bias
    return out.contiguous().reshape(*x.shape[:-1], out.shape[-1])


def install(model: Any) -> int:
    """Give each plain `nn.Linear` of `model` the weight-first product for few rows; returns how many.
    The weights are untouched (saving, syncing and tying see the same tensors)."""
    count = 0
    for module in model.modules():
        if type(module) is nn.Linear:
            module.forward = types.MethodType(_forward, module)  # type: ignore[method-assign]
            count += 1
    return count


def uninstall(model: Any) -> None:
    """Back to `nn.Linear`'s own forward (what `install` changed, nothing else)."""
    for module in model.modules():
        bound = module.__dict__.get("forward")
        if type(module) is nn.Linear and getattr(bound, "__func__", None) is _forward:
            del module.__dict__["forward"]
