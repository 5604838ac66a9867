"""Training on the cores meta-agent's executor gives this job, as that share changes.

When jobs train side by side, each starts with its share of the cores (`OMP_NUM_THREADS`). When a partner
ends and nothing takes its place, meta-agent rewrites this job's share file, named by
`META_AGENT_THREADS_FILE` (one integer; absent when training alone or run by hand). Following it between
steps lets a lone job use the cores its partner left instead of leaving them idle.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from transformers import TrainerCallback


def current_share() -> int | None:
    """The share file's threads (1..this machine's cores), or None: no file, or not a sensible number."""
    path = os.environ.get("META_AGENT_THREADS_FILE")
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            threads = int(f.read(16).decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return threads if 1 <= threads <= (os.cpu_count() or 1) else None


def follow_share() -> None:
    threads = current_share()
    if threads is not None and threads != torch.get_num_threads():
        torch.set_num_threads(threads)


class FollowShare(TrainerCallback):
    """Follows the share before each optimizer step (in the training thread, whose OpenMP setting counts)."""

    def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        follow_share()
