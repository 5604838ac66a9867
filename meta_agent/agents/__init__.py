"""Proposers: turn a rollout report into hypotheses and implement each on a candidate branch.

`skills` (offline, rule-based) and `llm` (diagnostician + coder agents over litellm)
implement the same Proposer protocol; the evolve loop does not know which it runs.
"""

from meta_agent.agents.base import (
    Hypothesis,
    Implementation,
    Outcome,
    PredictedEffect,
    ProposalContext,
    Proposer,
    Workspace,
)
from meta_agent.registry import Registry

PROPOSERS: Registry[Proposer] = Registry(
    "proposer",
    {
        "skills": "meta_agent.agents.skills_proposer:SkillsProposer",
        "llm": "meta_agent.agents.llm_proposer:LLMProposer",
    },
)

__all__ = [
    "PROPOSERS",
    "Hypothesis",
    "Implementation",
    "Outcome",
    "PredictedEffect",
    "ProposalContext",
    "Proposer",
    "Workspace",
]
