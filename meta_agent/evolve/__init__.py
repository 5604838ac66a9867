"""The evolve loop as a package.

- `context`: what a run shares (settings, repo, sandbox, journal, budget, progress); a leaf.
- `steps`: train a harness commit, evaluate a policy.
- `generation`: one generation, `candidate`: one candidate's cascade, `winners`: merges and skills.
- `run`: prepare (or resume) a run, run its generations, finalize (static arm, test split).
"""

from meta_agent.evolve.run import finalize, load_for_resume, prepare, run

__all__ = ["finalize", "load_for_resume", "prepare", "run"]
