"""Weights laid out for decoding a few rows at a time on a CPU.

`nn.Linear` keeps its weight as (out, in), row-major, and computes `x @ weight.T`. Decoding multiplies a
handful of rows (a batch's last tokens) by every weight once per token, and on this project's 2-core
Xeon that product ran 1.1-2.7x faster when the weight's storage is (in, out), row-major, the transpose
held as a strided view, so that the library reads it without transposing (SmolLM2's shapes at 8 rows:
576x576 0.37x the time, 1536x576 0.76x, the 49152-word head 0.62x; at 64 rows 0.70-0.94x, one shape
1.10x). A 47-token greedy decode of 8 rows went from 99 to 87 ms a token, the same tokens; at the math
evaluator's 64 rows the gain was within the machine's noise (1.06x and 0.95x in two runs, docs/scale.md).

The values are the same; only the order in which the library sums a product may differ, so logits move
by float rounding (5e-5 on SmolLM2). `bench/eval_throughput.py` compares the sealed evaluator's answers.
Tied weights stay tied (the embedding reads the same strided tensor). On a GPU nothing is changed.
`save_pretrained` cannot write a strided weight: `row_major` puts the usual layout back first (the served
evaluator does, before it hands the model to its server).
"""

from __future__ import annotations

from typing import Any


def transpose_linear_storage(model: Any) -> int:
    """Re-store every `nn.Linear` weight of `model` as the transpose of a contiguous (in, out) matrix, in
    place; returns how many weights moved. Every module that held one of those weights (a tied embedding)
    holds the moved one."""
    from torch import nn

    linear = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear) and m.weight.is_contiguous()}
    return _restore(model, lambda p: id(p) in linear, lambda t: t.t().contiguous().t())


def row_major(model: Any) -> int:
    """Undo `transpose_linear_storage` (and any other strided weight): every parameter contiguous again, ties
    kept. What writes the model out needs it (`save_pretrained` reads a tensor's storage as one run)."""
    return _restore(model, lambda p: not p.is_contiguous(), lambda t: t.contiguous())


def _restore(model: Any, select: Any, convert: Any) -> int:
    from torch import nn

    moved: dict[int, nn.Parameter] = {}
    for module in model.modules():
        for param in module._parameters.values():
            if param is not None and id(param) not in moved and select(param):
                moved[id(param)] = nn.Parameter(convert(param.detach()), requires_grad=param.requires_grad)
    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is not None and id(param) in moved:
                module._parameters[name] = moved[id(param)]
    return len(moved)
