"""A training run's compute, counted on the trusted side from what it left, never from what it says.

A candidate may re-split the control's budget (fewer prompts, more completions each), not grow it.
What it spent is read from its validated outputs and its checkpoint:

- completions: the rollout records it wrote (the count its settings imply is cross-checked);
- generated tokens: each completion re-tokenized here with the run's own tokenizer, compared with
  what main's settings allow (its `max_completion_length` per completion, times main's completions);
- optimizer steps: the optimizer state the checkpoint carries (`optimizer_state.safetensors`, one
  `step` counter per trained tensor, read without unpickling anything); once main's checkpoints
  carry it, a candidate's must too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git
import yaml
from pydantic import BaseModel, Field

from meta_agent.contract import RolloutRecord
from meta_agent.untrusted_files import is_regular_file

OPTIMIZER_STATE = "optimizer_state.safetensors"
MAX_OPTIMIZER_STATE_BYTES = 16_000_000
TOKEN_SLACK = 1.1
"""Room for re-tokenizing (10%, and 4 tokens a completion): decoded text need not split back into the same tokens."""


class ComputeBudget(BaseModel):
    """What main's settings (trusted: main was merged) allow one training run of `steps` steps."""

    completions_per_step: int
    max_completion_length: int
    steps: int

    @property
    def tokens(self) -> int:
        return self.completions_per_step * self.max_completion_length * self.steps


class Spent(BaseModel):
    """What a run generated and stepped, as counted here."""

    completions: int
    generated_tokens: int
    longest_completion: int
    optimizer_steps: int | None = Field(None, description="None: the checkpoint carries no optimizer state")


def settings_of(repo: git.Repo, commit: str, section: str = "rl") -> dict[str, Any]:
    """A section of a commit's harness.yaml (`rl`, `domain_settings`), read as data ({} when unreadable)."""
    try:
        cfg = yaml.safe_load(repo.git.show(f"{commit}:harness.yaml")) or {}
        found = cfg.get(section) or {}
        return found if isinstance(found, dict) else {}
    except (git.GitCommandError, yaml.YAMLError, AttributeError):
        return {}


AGENT_TURNS, AGENT_TURN_TOKENS = 3, 48
"""The shell agent's turns and tokens per turn where harness.yaml names none (harness/swe/settings.py)."""


def turn_budget(domain_settings: dict[str, Any]) -> tuple[int, int] | None:
    """(assistant turns per episode, new tokens per turn) of a multi-turn agent's settings; None where the
    settings name neither (a single-turn domain) or a value the harness would refuse to start with."""
    if not {"max_turns", "turn_tokens"} & domain_settings.keys():
        return None
    turns = _whole(domain_settings.get("max_turns", AGENT_TURNS))
    tokens = _whole(domain_settings.get("turn_tokens", AGENT_TURN_TOKENS))
    if turns is None or tokens is None or turns < 1 or tokens < 1:
        return None
    return turns, tokens


def _whole(value: object) -> int | None:
    """A whole number as the harness's settings model would take it (5, 5.0, "5"); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value if isinstance(value, int) else None


def budget_of(repo: git.Repo, commit: str, steps: int) -> ComputeBudget | None:
    rl = settings_of(repo, commit)
    try:
        per_step = int(rl.get("prompts_per_step", 2)) * int(rl.get("num_generations", 4))
        length = int(rl.get("max_completion_length", 48))
        return ComputeBudget(completions_per_step=per_step, max_completion_length=length, steps=steps)
    except (TypeError, ValueError):
        return None


def optimizer_steps(checkpoint: Path) -> int | None:
    """The step counter the checkpoint's optimizer state carries (the largest, when tensors disagree)."""
    path = checkpoint / OPTIMIZER_STATE
    if not is_regular_file(path) or path.stat().st_size > MAX_OPTIMIZER_STATE_BYTES:
        return None
    from safetensors.torch import load_file

    try:
        state = load_file(str(path))
    except Exception:  # a damaged file counts as none: a run that needs it is refused for that
        return None
    steps = [int(t.max().item()) for name, t in state.items() if name.endswith("step") and t.numel()]
    return max(steps) if steps else None


def spent(rollouts: list[RolloutRecord], checkpoint: Path, tokenizer: Any) -> Spent:
    lengths = [len(tokenizer(r.completion, add_special_tokens=False)["input_ids"]) for r in rollouts]
    return Spent(completions=len(rollouts), generated_tokens=sum(lengths), longest_completion=max(lengths, default=0),
                 optimizer_steps=optimizer_steps(checkpoint))


def multi_turn(rollouts: list[RolloutRecord]) -> bool:
    """Episodes whose completion is a transcript (policy turns and the environment's output): main's rollouts say
    so (`policy_tokens`), and main is what a candidate is compared with, never the candidate's own word."""
    return any("policy_tokens" in r.extra for r in rollouts)


def overspent(cand: Spent, control: Spent, budget: ComputeBudget | None, steps: int, multi_turn: bool) -> str | None:
    """Why the candidate spent more than the control may, with the numbers; None when it did not."""
    if control.optimizer_steps is not None and cand.optimizer_steps is None:
        return (f"its checkpoint carries no optimizer state ({OPTIMIZER_STATE}), main's does: the steps it took "
                "cannot be counted")
    if cand.optimizer_steps is not None and cand.optimizer_steps != steps:
        return f"its optimizer took {cand.optimizer_steps} steps; {steps} were asked for, as for the control"
    if budget is None or multi_turn:  # a transcript holds the environment's text too: only the total is compared
        if cand.generated_tokens > control.generated_tokens * 2 + 64:
            return (f"generated {cand.generated_tokens:,} tokens, over twice the control's "
                    f"{control.generated_tokens:,}")
        return None
    # Re-tokenizing decoded text is not exact (a sampled token sequence need not be the tokenizer's own split of
    # its text), so the bounds stand on the larger of main's settings and what main's own run re-counts to.
    cap = int(max(budget.max_completion_length, control.longest_completion) * TOKEN_SLACK) + 4
    if cand.longest_completion > cap:
        return (f"wrote completions of up to {cand.longest_completion} tokens; main's settings cap one at "
                f"{budget.max_completion_length} (its own run re-counts to {control.longest_completion})")
    allowed = int(max(budget.tokens, control.generated_tokens) * TOKEN_SLACK) + 4 * budget.steps
    if cand.generated_tokens > allowed:
        return (f"generated {cand.generated_tokens:,} tokens; main's settings allow {budget.tokens:,} "
                f"({budget.steps} steps x {budget.completions_per_step} completions x "
                f"{budget.max_completion_length} tokens; its own run re-counts to {control.generated_tokens:,})")
    return None
