"""Proposers: turn a rollout report into hypotheses and implement each on a candidate branch.

`skills` (offline, rule-based) and `llm` (diagnostician + coder agents over litellm) implement
the same Proposer protocol (`meta_agent.agents.base`); the evolve loop does not know which it
runs. Their names are registered in `meta_agent.proposers`.
"""
