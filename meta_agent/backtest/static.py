"""Stage 1, static: protected paths untouched (checked before anything runs), then `selftest` in the sandbox.

Its metrics say what the diff touches (`changed`, and `surfaces`: the parts the replay can judge and
the parts only training can, `backtest/surfaces.py`), which the gate reads to judge the change's kind.
"""

from __future__ import annotations

import time
from pathlib import Path

import git
from pydantic import BaseModel, ConfigDict

from meta_agent.backtest.surfaces import ChangeSurfaces, classify
from meta_agent.gitops import boundary_violations, changed_paths, export_tree, touched_protected
from meta_agent.harness_runner import HarnessError, HarnessRunner
from meta_agent.verdicts import StageResult
from sandboxes import Limits, Sandbox


class StaticEvidence(BaseModel):
    """What the static stage measured of a diff that reached its selftest (the gate reads `surfaces`)."""

    model_config = ConfigDict(extra="forbid")
    changed: list[str]
    surfaces: ChangeSurfaces


def static_evidence(stage: StageResult | None) -> StaticEvidence | None:
    """A static stage's evidence, or None where it stopped before measuring (a protected path, a boundary)."""
    return StaticEvidence.model_validate(stage.metrics) if stage is not None and stage.metrics else None


def run_static(repo: git.Repo, base: str, commit: str, sandbox: Sandbox, limits: Limits, work: Path) -> StageResult:
    started = time.monotonic()
    protected = touched_protected(repo, base, commit)
    if protected:
        return StageResult(stage="static", passed=False, seconds=time.monotonic() - started,
                           reason=f"touches protected paths {protected}; rejected before running anything")
    violations = boundary_violations(repo, base, commit)
    if violations:
        return StageResult(stage="static", passed=False, seconds=time.monotonic() - started,
                           reason=f"{'; '.join(violations)}; rejected before running anything")
    changed = changed_paths(repo, base, commit)
    metrics = StaticEvidence(changed=changed, surfaces=classify(repo, base, commit)).model_dump(mode="json")
    workdir = export_tree(repo, commit, work)
    try:
        with HarnessRunner(sandbox, workdir, commit=commit, limits=limits) as runner:
            result = runner.selftest(timeout=limits.timeout_s)
    except HarnessError as e:
        return StageResult(stage="static", passed=False, seconds=time.monotonic() - started,
                           reason=f"selftest failed: {e.reason}", metrics=metrics)
    summary = (result.stdout.strip().splitlines() or [""])[-1]
    return StageResult(stage="static", passed=True, seconds=time.monotonic() - started,
                       reason=f"selftest passed ({summary})", metrics=metrics)
