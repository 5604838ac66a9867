"""The reference arm: the starting harness with GRPO set up the way this field sets it up for a small
model with LoRA, changed only in `harness.yaml` and at the same completions per step as every other arm.

Each choice and where it comes from:
- learning_rate 1e-4: LoRA wants roughly ten times the full fine-tuning rate (Schulman et al., "LoRA
  Without Regret", Thinking Machines, 2025); measured on this kind of machine, SmolLM2 with LoRA r16
  at 1e-4 moves within 30 steps where the template's 2e-5 barely does (shared/ASSETS.md).
- 8 completions per prompt, 1 prompt per step (the template: 4 x 2): the same 8 completions per step,
  in larger groups, so fewer groups have zero reward variance and no advantage (GRPO's group baseline,
  Shao et al. 2024, uses 64 per prompt; 8 is TRL's default).
- epsilon_high 0.28 ("clip-higher") and masking truncated completions (overlong filtering): DAPO, Yu et
  al. 2025, against entropy collapse and against punishing a completion only for being cut off. Measured
  (bench/results/policy-movement-reference), clip-higher is inert here: the template trains on-policy,
  one optimizer step per batch, so no clip ever binds; it stays because the field sets it.
- curriculum easy_first: start with the easier tasks so a weak policy sees reward at all (curriculum
  learning; the math tasks carry a difficulty).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from meta_agent.errors import UserError
from meta_agent.gitops import commit_dir, init_harness

GRPO_REFERENCE: dict[str, dict[str, Any]] = {
    "rl": {"learning_rate": 1.0e-4, "num_generations": 8, "prompts_per_step": 1, "epsilon_high": 0.28,
           "mask_truncated_completions": True},
    "curriculum": {"strategy": "easy_first"},
}
REFERENCE: dict[str, dict[str, Any]] = {
    "math": GRPO_REFERENCE,
    # The same choices: they are about GRPO with LoRA on a small policy, not about the task. The reward stays
    # the template's (the share of visible tests passed; DeepCoder, Luo et al. 2025, pays only a full pass,
    # which the hidden tests of the sealed split measure here); the code tasks carry a difficulty too.
    "code": GRPO_REFERENCE,
}


def make_reference_harness(dest: Path, domain: str) -> Path:
    """A harness repo at `dest`: the template for `domain` plus the reference settings, as one commit."""
    if domain not in REFERENCE:
        raise UserError(f"no reference harness for domain {domain!r} yet (have: {', '.join(REFERENCE)})")
    repo = init_harness(dest, domain)
    path = dest / "harness.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    for section, values in REFERENCE[domain].items():
        config.setdefault(section, {}).update(values)
    header = "# The efficacy benchmark's reference harness (bench/efficacy_lib/reference.py says why each value).\n"
    path.write_text(header + yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    commit_dir(repo, dest, repo.head.commit.hexsha, "main", "Reference GRPO settings for the efficacy benchmark")
    repo.git.reset("-q")  # the checkout's index to the new main (its files already are)
    return dest
