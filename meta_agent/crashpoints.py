"""Named points between a side effect and the journal line that records it, where a crash is injected in tests.

`crashpoint("merge/after-update-ref")` does nothing unless `META_AGENT_CRASH_AT` names that point
(optionally `NAME@N` for its N-th pass, 1-based): then the process kills itself with SIGKILL, which is
what a power cut or an OOM kill does to a run. Two more variables serve the crash-injection test:
`META_AGENT_CRASH_TRACE=FILE` appends every point passed to FILE (so the test knows which points a
run reaches), and `META_AGENT_CRASH_SNAPSHOT=DIR` copies the run directory (and the user data dir, where skill evidence
lives) to DIR/<point>/ the first time each point is passed: the state a kill there would leave, so
one reference run yields a crashed state per point without a run per point.

Every point is declared in `POINTS` with what `resume` does there; docs/evolve.md lists them and a
test fails if one is never reached.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections import Counter
from pathlib import Path

CRASH_ENV = "META_AGENT_CRASH_AT"
TRACE_ENV = "META_AGENT_CRASH_TRACE"
SNAPSHOT_ENV = "META_AGENT_CRASH_SNAPSHOT"

POINTS: dict[str, str] = {
    "setup/after-run-info": "run.json exists, the harness repo not yet: resume creates it",
    "setup/harness-half-made": "the harness repo is being built (template copied, `git init` done, no commit "
                               "yet) beside its place: resume, or the same `evolve` again, builds it afresh",
    "setup/after-harness": "the harness repo exists (created whole, by rename), run/start not journaled: resume "
                           "opens it and journals the start",
    "step/after-work": "a step's work is done, its journal line not written: resume redoes the step "
                       "(every step is idempotent)",
    "candidate/after-branch": "the candidate's branch points at its commit, its creation is not journaled: resume "
                              "re-implements it and rewrites the branch with the identical commit",
    "verdict/after-note": "the verdict's git note is written, the verdict is not journaled: resume decides again "
                          "(the same stages, the same verdict) and rewrites the note",
    "merge/after-update-ref": "main points at the merge, the user's checkout does not follow yet: resume brings "
                              "the checkout along and notes the merge",
    "merge/after-note": "the merge is on main with its note, not journaled: resume sees it merged and journals it",
    "skills/after-evidence": "skill evidence is saved, not journaled: resume records it again, which is a no-op "
                             "for the same run and commit",
    "finalize/after-summary": "summary.md is written, run/done not journaled: resume journals it and rewrites "
                              "the same summary",
}
_passes: Counter[str] = Counter()


def crashpoint(name: str, run_dir: Path | None = None) -> None:
    """Mark the point `name` (declared in POINTS); a crash-injection test may kill the process here."""
    if name not in POINTS:
        raise KeyError(f"undeclared crash point {name!r}; declare it in meta_agent/crashpoints.py")
    _passes[name] += 1
    trace = os.environ.get(TRACE_ENV)
    if trace:
        with open(trace, "a", encoding="utf-8") as f:
            f.write(name + "\n")
    snapshot = os.environ.get(SNAPSHOT_ENV)
    if snapshot and run_dir is not None and _passes[name] == 1:
        target = Path(snapshot) / name.replace("/", "__")
        if not target.exists():
            shutil.copytree(run_dir, target / "run", symlinks=True)
            data = os.environ.get("META_AGENT_DATA")  # skill evidence lives in the user library
            if data and Path(data).is_dir():
                shutil.copytree(data, target / "data", symlinks=True)
    wanted = os.environ.get(CRASH_ENV)
    if wanted:
        point, _, nth = wanted.partition("@")
        if point == name and _passes[name] == int(nth or 1):
            os.kill(os.getpid(), signal.SIGKILL)
