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

_NOT_RESULTS = {"run_dir", "harness", "tracker", "budget", "rerun_known", "generations", "test_limit"}
"""Settings that change where a run writes, when it stops, how long it goes on, what it proposes or its final
test comparison, not what a generation's backtests measure."""


def _history_digest(ctx: RunContext, history: Path) -> str:
    """The carried-over rollouts, each naming the harness it ran under by main's tree, not by commit: a
    commit's hash carries its time, so the same harness in another run has another commit."""
    h = hashlib.sha256()
    trees: dict[str, str] = {}
    with history.open() as f:
        for line in f:
            record = json.loads(line)
            commit = record.get("harness_commit") if isinstance(record, dict) else None
            if isinstance(commit, str):
                if commit not in trees:
                    trees[commit] = ctx.repo.commit(commit).tree.hexsha
                record["harness_commit"] = trees[commit]
            h.update(json.dumps(record, sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def _root_identity(root: Path) -> list[list[object]]:
    """The root model's files by name, size and modification time (hashing a 15 GB model per generation
    would cost more than the skip saves; a model replaced in place gets new times)."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [[p.relative_to(root).as_posix() if p != root else p.name, p.stat().st_size, p.stat().st_mtime_ns]
            for p in files]


def conditions(ctx: RunContext, g: int, main: str, policy: Path, history: Path | None) -> str:
    """The digest of generation g's backtest conditions; '' when some input cannot be read (then shown)."""
    try:
        digest = policy_digest(policy, ctx.root_policy)
        if digest is None:
            return ""
        settings = ctx.cfg.model_dump(mode="json", exclude=_NOT_RESULTS)
        llm = settings.get("llm")
        if isinstance(llm, dict):
            llm.pop("cache_dir", None)
        parts = {
            "meta_agent": __version__, "domain": ctx.domain.name, "settings": settings, "generation": g,
            "main_tree": ctx.repo.commit(main).tree.hexsha, "policy": digest,
            "root": _root_identity(ctx.root_policy),
            "history": _history_digest(ctx, history) if history is not None else None,
            "train_tasks": sha256_file(ctx.tasks_file),
            "selection": tasks_digest(ctx.domain, "selection"),
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    except Exception as e:  # a doubt costs a rerun, never the run
        ctx.reporter.phase(f"gen {g}: backtest conditions not digested ({failure_text(e, 300)}); earlier runs' "
                           "rejections are not reused this generation")
        return ""
