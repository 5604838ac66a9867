"""A proposer defined outside meta-agent that gets its first attempt wrong, as coders do.

Its implementation closes the math reward hole (only one explicit 'Answer: N' line pays) but puts the
helper in a new top-level module, which the static stage rejects before running anything (such a module
could shadow a package on `sys.path`). Shown that failure in a repair turn, it moves the helper into
harness/math/rewards.py and deletes the module. With REPAIRING_PROPOSER_MODE=give_up it declines to repair;
with kill_once the process is SIGKILLed in the middle of its first repair turn (edits made, nothing
committed), as a crash would stop it, and repairs normally after `resume`.
All edits go through the workspace's sandbox session, like any proposer's.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from meta_agent.agents.base import Failure, Hypothesis, Implementation, Outcome, ProposalContext, Workspace

HELPER = '''def single_answer(text: str) -> str | None:
    """The stated answer when exactly one distinct 'Answer: N' value is stated, else None."""
    stated = {m.replace(",", "") for m in ANSWER_LINE.findall(text)}
    return stated.pop() if len(stated) == 1 else None
'''
MODULE = "from harness.math.answers import ANSWER_LINE\n\n\n" + HELPER
IMPORTS = "from harness.math.answers import answer_line, last_number, same_number"
CORRECTNESS_BEFORE = "    stated = answer_line(r.completion) or last_number(r.completion)"
CORRECTNESS_AFTER = "    stated = single_answer(r.completion)\n    if stated is None:\n        return 0.0"

EDIT = r"""
import json, os, sys
ops = json.loads(sys.argv[1])
for op in ops:
    if op["do"] == "write":
        with open(op["path"], "w") as f:
            f.write(op["text"])
    elif op["do"] == "replace":
        text = open(op["path"]).read()
        assert op["old"] in text, op["old"]
        with open(op["path"], "w") as f:
            f.write(text.replace(op["old"], op["new"]))
    elif op["do"] == "delete":
        os.remove(op["path"])
"""


def _edit(ws: Workspace, ops: list[dict[str, str]]) -> None:
    result = ws.session.run([sys.executable, "-c", EDIT, json.dumps(ops)], timeout=60)
    if not result.ok:
        raise RuntimeError(result.describe_failure())


REWARDS = "harness/math/rewards.py"


class RepairingProposer:
    name = "repairing"

    def __init__(self, mode: str, run_dir: Path | None = None) -> None:
        self.mode = mode
        self.killed_marker = run_dir / "killed-in-repair" if run_dir else None

    @classmethod
    def from_config(cls, cfg: object, skills: object, run_dir: Path) -> RepairingProposer:
        return cls(os.environ.get("REPAIRING_PROPOSER_MODE", "fix"), run_dir)

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        return [Hypothesis(
            title="Reward only one explicit final answer line", failure_mode="probes_rewarded",
            evidence=f"probes rewarded: {ctx.report.probes_rewarded}",
            intervention="pay correctness only when exactly one distinct 'Answer: N' value is stated",
            kind="validity", params={"repair": self.mode})][:k]

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        _edit(workspace, [
            {"do": "write", "path": "strict_answer.py", "text": MODULE},
            {"do": "replace", "path": REWARDS, "old": CORRECTNESS_BEFORE, "new": CORRECTNESS_AFTER},
            {"do": "replace", "path": REWARDS, "old": IMPORTS,
             "new": IMPORTS + "\nfrom strict_answer import single_answer"},
        ])
        return Implementation(ok=True, summary="strict answer check in a helper module")

    def repair(self, hypothesis: Hypothesis, workspace: Workspace, failure: Failure) -> Implementation:
        if hypothesis.params.get("repair") == "give_up" or "strict_answer.py" not in failure.reason:
            return Implementation(ok=False, reason=f"cannot repair a {failure.stage} failure: {failure.reason[:200]}")
        _edit(workspace, [
            {"do": "delete", "path": "strict_answer.py"},
            {"do": "replace", "path": REWARDS, "old": IMPORTS + "\nfrom strict_answer import single_answer",
             "new": "from harness.math.answers import ANSWER_LINE, same_number"},
            {"do": "replace", "path": REWARDS, "old": "\n\ndef correctness",
             "new": "\n\n" + HELPER + "\n\ndef correctness"},
        ])
        if self.mode == "kill_once" and self.killed_marker is not None and not self.killed_marker.exists():
            self.killed_marker.write_text("killed mid-repair once\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return Implementation(ok=True, summary=f"moved the helper into {REWARDS} (repair {failure.attempt})")

    def learn(self, outcome: Outcome) -> Path | None:
        return None
