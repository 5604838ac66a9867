"""Which proposers exist: a registered name or a `module:Class` plugin -> the class that proposes.

Every proposer implements `meta_agent.agents.base.Proposer` and is built with
`Class.from_config(cfg, skills, run_dir)`; this module imports none of them, so the config
can check a name without loading an LLM client.
"""

from meta_agent.registry import Registry

PROPOSERS: Registry[object] = Registry(
    "proposer",
    {
        "skills": "meta_agent.agents.skills_proposer:SkillsProposer",
        "llm": "meta_agent.agents.llm_proposer:LLMProposer",
        "random": "meta_agent.agents.random_proposer:RandomProposer",
        "random-matched": "meta_agent.agents.random_proposer:MatchedRandomProposer",
    },
)
