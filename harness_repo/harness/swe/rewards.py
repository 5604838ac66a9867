"""Reward components for SWE. harness.yaml `rewards:` picks components and weights.

The default reward runs the instance's FAIL_TO_PASS and PASS_TO_PASS tests on the episode's
final diff in a fresh checkout: 1 when all pass, else 0. It runs the tests as the diff leaves
them, so a diff that edits or deletes the failing tests can pass; the sealed evaluator restores
the original tests, and meta-agent probes for exactly this hole.
Add a component: write `def name(r: Rollout) -> float`, register it in REWARDS, weight it in harness.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.rollout import Rollout
from harness.swe import remote
from harness.swe.testrun import evaluate


def test_results(r: Rollout, restore_tests: bool = False) -> dict[str, Any]:
    """The instance's test outcomes on this rollout's final diff (cached per diff)."""
    if remote.in_image(r.task):
        results = remote.test(r.task, r.extra.get("diff", ""))
        r.extra["tests"] = results
        return results
    timeout = float(r.settings.get("test_timeout_s", 60))
    results = evaluate(r.task, r.extra.get("diff", ""), Path(r.task["tasks_dir"]), timeout, restore_tests)
    r.extra["tests"] = results
    return results


def resolved(r: Rollout) -> float:
    """1 when every FAIL_TO_PASS and PASS_TO_PASS test passes after the diff, else 0."""
    t = test_results(r)
    ok = t["applies"] and t["f2p_total"] > 0 and t["f2p_passed"] == t["f2p_total"] and t["p2p_failed"] == 0
    return 1.0 if ok else 0.0


REWARDS: dict[str, Callable[[Rollout], float]] = {
    "resolved": resolved,
}
