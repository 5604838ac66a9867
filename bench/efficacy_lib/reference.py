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
    # Agentic SWE, the way DeepSWE (Luo et al., Agentica and Together AI, 2025, "GRPO++"), SkyRL-v0 (NovaSky,
    # 2025) and SWE-Gym (Pan et al., 2024) set it up, sized for a small policy with LoRA on a CPU:
    # - the LoRA learning rate above; episodes per step stay the template's 4 (one task, one group): an
    #   episode is up to 6 x 128 tokens, ten times a math completion;
    # - clip-higher 0.28 and no KL (beta 0, the template's already): DeepSWE, from DAPO;
    # - no division by the group's reward std (scale_rewards none): DeepSWE, from Dr. GRPO; with a 0/1
    #   "resolved" reward a group with one success would otherwise weigh it by 1/std;
    # - masking episodes cut off by the turn limit (mask_truncated_completions): DeepSWE's "compact
    #   filtering", which masks trajectories that hit the step, context or time limit;
    # - easy-first curriculum: SkyRL-v0 and DeepSWE train on instances filtered to those the policy
    #   can sometimes solve; the tier is the task's difficulty here;
    # - the training scaffold the same as the sealed one it is scored under (6 turns of 128 tokens,
    #   meta_agent.domains.settings.ScaffoldSettings): SWE-Gym and SkyRL-v0 train and evaluate in one
    #   scaffold (OpenHands). The template trains with 3 turns of 48 tokens, too short for an edit.
    # - one episode per forward and backward pass (micro_batch_size 1, gradient accumulation): the same
    #   update; four ~2,500-token episodes at once took SmolLM2 past the default 12 GB sandbox cap.
    # Not here, because it is not a setting: SWE-Gym's and Nebius's (Golubev et al., 2025) rejection-sampling
    # fine-tuning before RL, a warm start on successful demonstrations.
    "swe": {
        "rl": {"learning_rate": 1.0e-4, "epsilon_high": 0.28, "scale_rewards": "none",
               "mask_truncated_completions": True, "max_completion_length": 128, "micro_batch_size": 1},
        "curriculum": {"strategy": "easy_first"},
        "domain_settings": {"max_turns": 6, "turn_tokens": 128},
    },
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
