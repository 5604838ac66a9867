"""What a generation's backtests run under, as one digest (skills/known.py says what it is for).

Two generations share the digest only when every input of their backtests is the same: meta-agent's
version, the domain, the run's settings (all but those no backtest reads: where files go, the tracker, the
budget, the number of generations, the final test's size), the generation's index (its seeds), main's tree,
the policy it starts from (by content, as the evaluation memo keys it), the root model (its files' names,
sizes and modification times), the rollouts it carries over, the training tasks the harness gets and the
sealed selection tasks. Anything that cannot be read makes the digest '' (nothing matches it), so a doubt
costs a rerun, never a skip.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from meta_agent import __version__
from meta_agent.errors import failure_text
from meta_agent.eval_memo import policy_digest, tasks_digest
from meta_agent.evolve.context import RunContext
from meta_agent.fsutil import sha256_file
from meta_agent.train_memo import history_digest, root_identity


def conditions(ctx: RunContext, g: int, main: str, policy: Path, history: Path | None) -> str:
    """The digest of generation g's backtest conditions; '' when some input cannot be read (then shown)."""
    try:
        digest = policy_digest(policy, ctx.root_policy)
        if digest is None:
            return ""
        parts = {
            "meta_agent": __version__, "domain": ctx.domain.name, "settings": ctx.cfg.result_settings(),
            "generation": g,
            "main_tree": ctx.repo.commit(main).tree.hexsha, "policy": digest,
            "root": root_identity(ctx.root_policy),
            "history": history_digest(ctx.repo, history) if history is not None else None,
            "train_tasks": sha256_file(ctx.tasks_file),
            "selection": tasks_digest(ctx.domain, "selection"),
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    except Exception as e:  # a doubt costs a rerun, never the run
        ctx.reporter.phase(f"gen {g}: backtest conditions not digested ({failure_text(e, 300)}); earlier runs' "
                           "rejections are not reused this generation")
        return ""
