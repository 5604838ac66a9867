"""A proposer whose own work fails in every way a bad reply makes it fail, one generation at a time.

Generation 0: the first process is SIGKILLed inside `propose` (a crash mid-diagnosis); after `resume`,
`propose` raises (the diagnosis crashed). Generation 1: it returns a hypothesis whose params nest 300
levels deep (2 kB that no serializer takes) beside a valid one. The valid one edits a comment in
harness.yaml, so the generation has a real candidate to backtest. None of this may stop the run.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from meta_agent.agents.base import Hypothesis, Implementation, Outcome, ProposalContext, Workspace


def _nested(depth: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for _ in range(depth):
        out = {"deeper": out}
    return out


class HostileProposer:
    name = "hostile"

    def __init__(self, run_dir: Path) -> None:
        self.killed = run_dir / "killed-in-propose"

    @classmethod
    def from_config(cls, cfg: object, skills: object, run_dir: Path) -> HostileProposer:
        return cls(run_dir)

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        if ctx.generation == 0:
            if not self.killed.exists():
                self.killed.write_text("killed mid-propose once\n")
                os.kill(os.getpid(), signal.SIGKILL)
            raise RecursionError("maximum recursion depth exceeded while handling the model's reply")
        deep = Hypothesis.model_construct(
            title="Deep params", failure_mode="test", evidence="e", evidence_rollouts=[], intervention="i",
            kind="performance", predicted_effects=[], skills_used=[], new_labels=[], surface=None,
            params=_nested(300))
        fine = Hypothesis(title="Note the learning rate in harness.yaml", failure_mode="test", evidence="none",
                          intervention="add a comment to harness.yaml", kind="validity")
        return [deep, fine]

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        code = "import pathlib; p = pathlib.Path('harness.yaml'); p.write_text(p.read_text() + '# noted\\n')"
        result = workspace.session.run([sys.executable, "-c", code], timeout=60)
        if not result.ok:
            return Implementation(ok=False, reason=result.describe_failure())
        return Implementation(ok=True, summary=json.dumps({"edited": "harness.yaml"}))

    def learn(self, outcome: Outcome) -> Path | None:
        return None
