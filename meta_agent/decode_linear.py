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

import contextlib
import functools
import os
import types
import weakref
from typing import Any

import torch
from torch import nn

from sandboxes.base import MEMORY_ENV  # a sandbox's memory cap in MB, as its commands are told it

SKINNY_ROWS = 64
"""Without oneDNN, products of at most this many rows go weight-first; more (a prefill) take `F.linear`,
which is as fast there."""

PACK_HINT = 64
"""The row count oneDNN lays a packed weight out for; any count runs on it (1 to 1,024 measured), and on
the EPYC the hint moved no row count by more than the run-to-run spread."""

RESERVE_BYTES = 2 << 30
"""Memory left free when packing: a weight is packed only while this much would stay, after its packed copy,
under the sandbox's cap and in the machine's available memory, so that a model too large to hold twice keeps
the weight-first product for the layers that do not fit instead of being killed for memory (the learner's
backward and the KV cache come after the sampler has packed)."""

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


def _status_bytes(field: str) -> int | None:
    """A `kB` field of /proc/meminfo (`MemAvailable`) or of this process's /proc/self/status (`VmRSS`)."""
    path = "/proc/meminfo" if field.startswith("Mem") else "/proc/self/status"
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def room() -> int | None:
    """Bytes this process may still take: the machine's available memory and, under a sandbox, what its
    cap leaves above this process's resident size, whichever is less. None where neither can be read."""
    rooms = []
    available = _status_bytes("MemAvailable")
    if available is not None:
        rooms.append(available)
    cap, resident = os.environ.get(MEMORY_ENV, ""), _status_bytes("VmRSS")
    if resident is not None:
        with contextlib.suppress(ValueError, OverflowError):  # unset or not a number: no cap to respect
            rooms.append(int(float(cap) * (1 << 20)) - resident)
    return min(rooms) if rooms else None


def _packed(layer: nn.Linear) -> torch.Tensor | None:
    """The layer's weight in oneDNN's blocked layout, packed again whenever the weight changed since: a write
    in place (`copy_`, an optimizer step) moves its version counter, a new tensor its address. None where
    oneDNN cannot pack it or memory has no room for the copy (the layer then takes the weight-first product;
    the room is asked again at the weight's next change)."""
    w = layer.weight
    try:
        key = (w.data_ptr(), w._version, tuple(w.shape))
    except RuntimeError:  # an inference tensor keeps no version: a write to it could not be seen
        return None
    held = _PACKED.get(layer)
    if held is not None and held[0] == key:
        return held[1]
    _PACKED.pop(layer, None)  # an outdated copy is freed before the room for its successor is asked
    free = room()
    packed = None
    if free is None or free - w.nelement() * w.element_size() >= RESERVE_BYTES:
        try:
            packed = torch.ops.mkldnn._reorder_linear_weight(w.detach(), PACK_HINT)
        except RuntimeError:  # oneDNN cannot lay it out, or the allocation was refused (an address-space cap)
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
    product (as much memory again as the linear weights) where memory has room for it (`RESERVE_BYTES`)."""
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
