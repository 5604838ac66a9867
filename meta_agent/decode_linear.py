"""Linear layers that multiply a few rows at the rate memory allows: what a decode step is made of.

A decode step multiplies a handful of rows (one per sequence) by every weight of the model, so it is
bound by reading the weights. On a CPU, torch's `F.linear(x, W)` of 2-8 rows by a (out, in) weight read
it at 8 GB/s on the project's 2-core EPYC (MKL, AVX2) and the LM head at 5 GB/s, where the same product
written weight-first, `(W @ x.T).T`, read at 19-20 GB/s, the machine's memory bandwidth: SmolLM2-135M's
linear layers at 4 rows went from 51 ms to 21 ms a token, its head from 19 ms to 5.5 ms. It was never
slower at any row count tried (1 to 2048), and from 16 rows on it gave bitwise the same values; at 2-8
rows values differ by float rounding (summation order), so a sampled or greedy token can flip where two
words are within rounding of each other. `bench/decode_linear.py` measures the forms on this machine.

Faster still, where torch has oneDNN (every x86 and ARM build of torch ships it): each weight packed once into
oneDNN's blocked layout and multiplied by `mkldnn._linear_pointwise`, the op torch's own compiler uses for
a frozen CPU linear. Measured on the EPYC over all of SmolLM2's linear weights (fp32, best of 4): 8 rows 40-50
ms against 75-80 weight-first and 80 with `F.linear`, 64 rows 134-144 against 170-185, 512 rows (a prefill)
950 against 1,131; at 1-4 rows the same as weight-first. So it takes every row count, a prefill's included.
The weight is packed again after any write to it (the merged sampler's refresh, a load), and it too sums in
another order than `F.linear` (last-bit differences; a row's values do not depend on the other rows).

The sealed evaluator's copy (`policy.load_for_inference` installs it on a CPU); the harness template has its
own (harness/decode_linear.py) for its sampler, as harness code runs without meta-agent's package.
Only for inference (the learner keeps `nn.Linear`; its rows are many), and only fp32 weights on a CPU:
bf16 (an AMX CPU's sampler) and GPUs were not measured, so they keep `F.linear`.
"""

from __future__ import annotations

import functools
import types
import weakref
from typing import Any

import torch
from torch import nn

SKINNY_ROWS = 64
"""Without oneDNN, products of at most this many rows go weight-first; more (a prefill) take `F.linear`,
which is as fast there."""

PACK_HINT = 64
"""The row count oneDNN lays a packed weight out for; any count runs on it (1 to 1,024 measured), and on
the EPYC the hint moved no row count by more than the run-to-run spread."""

_PACKED: weakref.WeakKeyDictionary[nn.Module, tuple[tuple[int, int, tuple[int, ...]], torch.Tensor | None]] = \
    weakref.WeakKeyDictionary()
"""Each layer's packed weight: (the weight's identity and version when packed, the packed copy). Kept beside
the layer, not in it, so a layer can still be deep-copied or pickled (a packed tensor cannot); a copy packs
its own at its first product."""


@functools.cache
def _onednn() -> bool:
    """Whether this torch can pack a weight for oneDNN and multiply on it (asked once)."""
    ops = getattr(torch.ops, "mkldnn", None)
    return bool(torch.backends.mkldnn.is_available() and hasattr(ops, "_reorder_linear_weight")
                and hasattr(ops, "_linear_pointwise"))


def _packed(layer: nn.Linear) -> torch.Tensor | None:
    """The layer's weight in oneDNN's blocked layout, packed again whenever the weight changed since: a write
    in place (`copy_`, an optimizer step) moves its version counter, a new tensor its address. None where
    oneDNN cannot pack it (the layer then takes the weight-first product)."""
    w = layer.weight
    try:
        key = (w.data_ptr(), w._version, tuple(w.shape))
    except RuntimeError:  # an inference tensor keeps no version: a write to it could not be seen
        return None
    held = _PACKED.get(layer)
    if held is not None and held[0] == key:
        return held[1]
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(w.detach(), PACK_HINT)
    except RuntimeError:
        packed = None
    _PACKED[layer] = (key, packed)
    return packed


def _on_packed(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """`x @ W.T + bias` on W packed by `_packed`."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def _forward(self: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    w = self.weight
    if w.device.type != "cpu" or w.dtype != torch.float32 or x.dtype != torch.float32 or (
            torch.is_grad_enabled() and (w.requires_grad or x.requires_grad)):
        return nn.functional.linear(x, self.weight, self.bias)
    rows = x.numel() // max(1, x.shape[-1])
    packed = _packed(self) if _onednn() else None
    flat = x.reshape(rows, x.shape[-1])
    if packed is not None:
        try:
            out = _on_packed(flat, packed, self.bias)
            return out.reshape(*x.shape[:-1], out.shape[-1])
        except RuntimeError:  # oneDNN refused this CPU or shape: this layer keeps the weight-first form
            _PACKED[self] = (_PACKED[self][0], None)
    if rows > SKINNY_ROWS:
        return nn.functional.linear(x, self.weight, self.bias)
    out = torch.mm(w, flat.t()).t()
    if self.bias is not None:
        out = out + self.bias
    return out.contiguous().reshape(*x.shape[:-1], out.shape[-1])


def install(model: Any) -> int:
    """Give each plain `nn.Linear` of `model` the inference product above; returns how many. The weights are
    untouched (saving, syncing and tying see the same tensors); a packed copy of each is made at its first
    product (as much memory again as the linear weights)."""
    count = 0
    for module in model.modules():
        if type(module) is nn.Linear:
            module.forward = types.MethodType(_forward, module)  # type: ignore[method-assign]
            count += 1
    return count


def uninstall(model: Any) -> None:
    """Back to `nn.Linear`'s own forward (what `install` changed, nothing else), packed copies dropped."""
    for module in model.modules():
        bound = module.__dict__.get("forward")
        if type(module) is nn.Linear and getattr(bound, "__func__", None) is _forward:
            del module.__dict__["forward"]
            _PACKED.pop(module, None)
