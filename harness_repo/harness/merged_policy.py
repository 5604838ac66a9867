"""A merged copy of the policy for sampling: LoRA folded into the weights, held in the training dtype.

Why: TRL samples completions with the model it trains. On a mixed-precision run that model keeps fp32
master weights and runs under autocast, which casts every weight to bf16 again at every decode step
(autocast caches casts only for weights that need gradients, and frozen LoRA bases do not), and with LoRA
every linear layer runs three matmuls plus PEFT's Python around them. Decoding token by token pays both
costs once per token. The merged copy pays neither: one plain matmul per layer in bf16. On a 2-core
AMX CPU, SmolLM2-135M with LoRA r16 samples 8 x 48 tokens in about a third of the time. On a CPU in fp32
its linear layers multiply on weights packed for oneDNN (or a decode step's few rows weight-first where
torch lacks it; harness/decode_linear.py), repacked after each refresh.

What changes: the sampler's numerics. The learner (TRL's log-prob forward) still runs the fp32 master
weights under autocast; the sampler runs bf16 weights with a bf16 residual stream. This is the same kind
of sampler/learner gap as vLLM generation has, and `sync` makes the copy's weights equal the learner's
(up to the bf16 cast) before every generation, so the policy never lags a step.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from harness import decode_linear

_PEFT_PREFIX = "base_model.model."


def _twin_name(name: str) -> str:
    """The merged model's name for a parameter of the (possibly PEFT-wrapped) policy."""
    name = name.removeprefix(_PEFT_PREFIX)
    return name.replace(".base_layer.", ".")


def _contiguous_input(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The LM head's input, made contiguous. At the first decode step the model hands its head the last
    position of every row, a strided view of the prompt's hidden states; torch's CPU matmul cannot fold
    that view into one matrix product and instead broadcasts the head's weight to every row (a copy of
    batch x vocabulary x hidden: 450 MB and about 1 s per generation for SmolLM2 at batch 8)."""
    return (args[0].contiguous(), *args[1:]) if args and isinstance(args[0], torch.Tensor) else args


class MergedPolicy:
    """Holds the merged copy; `sync()` refreshes it from the trained model, `model` is what generates."""

    def __init__(self, policy: nn.Module, dtype: torch.dtype) -> None:
        self.policy = policy
        self.dtype = dtype
        source = copy.deepcopy(policy)
        for module in source.modules():
            # TRL's fused log-prob head and accelerate's autocast replace a module's forward with an
            # instance attribute whose closure holds the ORIGINAL module: a copy that kept it would run the
            # trained model, not itself. The copy only generates, so its class's own forward is the one.
            module.__dict__.pop("forward", None)
            module.__dict__.pop("_original_forward", None)
        merged = source.merge_and_unload() if hasattr(source, "merge_and_unload") else source
        self.model: nn.Module = merged.to(dtype).eval().requires_grad_(False)
        decode_linear.install(self.model)
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        if head is not None:
            head.register_forward_pre_hook(_contiguous_input)
        twin = dict(self.model.named_parameters())
        self._pairs: list[tuple[nn.Parameter, Any]] = []
        lora = {name: mod for name, mod in policy.named_modules() if hasattr(mod, "get_delta_weight")}
        for name, param in policy.named_parameters():
            if ".lora_" in name:
                continue
            target = twin.get(_twin_name(name))
            if target is None:  # a tied weight appears once in named_parameters(); its twin is tied too
                continue
            owner = name.rsplit(".base_layer.", 1)[0] if ".base_layer." in name else None
            layer = lora.get(owner) if owner and name.endswith(".base_layer.weight") else None
            self._pairs.append((target, (param, layer)))
        if not self._pairs:
            raise RuntimeError("merged policy: no parameter of the policy maps onto its merged copy")

    @torch.no_grad()
    def sync(self) -> nn.Module:
        """Copy the trained weights (base + scaled LoRA delta) into the merged copy; returns it."""
        for target, (param, layer) in self._pairs:
            value = param
            if layer is not None:
                for adapter in layer.active_adapters:
                    if adapter in layer.lora_A:
                        value = value + layer.get_delta_weight(adapter).to(param.dtype)
            target.copy_(value)
        return self.model
