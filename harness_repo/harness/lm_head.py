"""TRL's fused LM head, made to project only the positions a loss reads, on every device.

TRL's chunked log-prob head (trl.trainer.utils, `fused_lm_head`) serves both trainers this harness runs:
GRPO's log-prob forward and the warm start's SFT loss. It drops prompt and padding rows before the
vocabulary projection only where Triton runs (CUDA, XPU); elsewhere it projects every position and masks
afterwards. So on a CPU the rows no loss reads cost a full vocabulary matmul forward and backward: a
GRPO row's prompt (3-4x its completion), and an SFT demonstration's statement and observations (about
four fifths of a SWE demonstration's tokens).
"""

from __future__ import annotations


def score_completion_rows_only() -> None:
    """Have TRL's fused head keep only the labelled positions. Its reason for projecting every position
    elsewhere (a varying row count recompiles Neuron's fixed tiles) does not apply to eager CPUs, and the
    rows it keeps give the same log-probs, entropies and loss. TRL's own name for the switch is
    `_use_triton`; in trl.trainer.utils it decides nothing else. Process-wide: both trainers want it."""
    import trl.trainer.utils as trl_utils

    if hasattr(trl_utils, "_use_triton"):
        trl_utils._use_triton = lambda device: True
