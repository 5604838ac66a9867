"""The evolve loop as a package.

- `context`: what a run shares (settings, repo, sandbox, journal, budget, progress); a leaf.
- `steps`: train a harness commit, evaluate a policy.
- `generation`: one generation, `candidate`: one candidate's cascade, `winners`: merges and skills.
- `run`: prepare (or resume) a run, run its generations, finalize (static arm, test split).
- around them: `confirm` (the longer rung), `combine` (a later winner on top of earlier ones), `fanout`
  (backtests through the executor), `evidence` (the folder the agents read), `archive`, `static_arm`,
  `skill_trial`, `active_time`; for the user: `estimate` (the plan and its wall time), `eta` (time to
  go), `live` (live.json).

Shared with the rest of meta_agent: journal keys and candidate ids are built and parsed only in
`meta_agent/journal_keys.py`; "a candidate as it ended" is folded only in `meta_agent/candidate_fold.py`;
settings are layered only by `meta_agent/config.build` (evolve and resume alike).
"""

from meta_agent.evolve.run import finalize, load_for_resume, prepare, run

__all__ = ["finalize", "load_for_resume", "prepare", "run"]
