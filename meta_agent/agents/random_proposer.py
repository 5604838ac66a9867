"""A control for the search, not a search: each slot gets a skill drawn at random, with a random value from
each of its parameter ranges, whatever the report says (`--proposer random`, or `random-matched`).

It answers "is the diagnosis worth anything?". It goes through the same gate, with the same steps per
candidate; only the choice of what to try is blind. If the skills proposer (or an LLM) does not beat it at
equal compute, what it merged was what the gate let through, not what the report pointed at (the efficacy
benchmark's `random_search` arm).

Two controls, for two proposers under test:
- `random` fills every slot (`candidates` a generation), as an LLM proposer does.
- `random-matched` proposes as many candidates a generation as the skills proposer would from the same report
  and history, each drawn blind. The skills proposer proposes only skills whose triggers fire and that it
  has not tried, so it often fills fewer slots: against it, `random` searched with up to 4.5x its compute
  (144 search steps to 32 on one efficacy seed), a control stronger than the equal-compute one it claims to be.

Draws come from a generator seeded by the run's seed and the generation, so a resumed run proposes the same.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from meta_agent.agents.base import ProposalContext
from meta_agent.agents.skills_proposer import SkillsProposer, skill_hypothesis
from meta_agent.config import EvolveConfig
from meta_agent.hypothesis import Hypothesis
from meta_agent.skills.store import Skill, SkillSet


def draw_params(skill: Skill, rng: random.Random) -> dict[str, Any]:
    """The skill's defaults, with each parameter that has a range set to a value drawn from it."""
    params = dict(skill.meta.params)
    for name, values in sorted(skill.meta.param_ranges.items()):
        params[name] = rng.choice(values)
    return params


class RandomProposer(SkillsProposer):
    """Random skill and parameters per slot; implemented like the skills proposer (the skill's apply.py)."""

    name = "random"

    @classmethod
    def from_config(cls, cfg: EvolveConfig, skills: SkillSet, run_dir: Path) -> RandomProposer:
        return cls(skills=skills, seed=cfg.seed)

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        """k different skills of the report's domain that have code to apply (fewer if there are fewer),
        drawn uniformly, with their parameters drawn from their ranges."""
        domain = ctx.report.domain
        pool = sorted((s for s in self.skills.all() if s.meta.active_in(domain) and s.apply_script is not None),
                      key=lambda s: s.name)
        rng = random.Random(f"random-proposer:{self.seed}:{ctx.generation}")
        out = []
        for skill in rng.sample(pool, min(k, len(pool))):
            m = skill.meta
            params = draw_params(skill, rng)
            shown = ", ".join(f"{n}={params[n]}" for n in sorted(m.param_ranges))
            out.append(skill_hypothesis(
                m, params, title=f"Random control: apply skill {m.name}" + (f" ({shown})" if shown else ""),
                failure_mode="none (random control)",
                evidence=f"Drawn at random by the search control (--proposer {self.name}); the rollout report was not "
                         "read. Its verdict shows what the gate lets through when nothing is diagnosed."))
        return out


class MatchedRandomProposer(RandomProposer):
    """`--proposer random-matched`: the random control at the skills proposer's candidate count."""

    name = "random-matched"

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        """As many blind draws as `SkillsProposer.propose` returns here (its count only: not what it chose)."""
        return super().propose(ctx, len(SkillsProposer.propose(self, ctx, k)))
