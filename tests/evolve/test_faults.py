"""Broken candidates are rejected with their reason and the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_agent.journal import StageDone, VerdictRecorded
from tests.conftest import journal
from tests.evolve.conftest import FAULT_SKILLS, meta_agent, tiny_config

pytestmark = pytest.mark.slow  # runs a whole loop: not in `make test-fast`

EXPECTED = {
    # skill -> (stage that rejects it, text the reason must contain)
    "fault-does-not-apply": ("implement", "cannot apply"),
    "fault-no-import": ("static", "selftest failed"),
    "fault-protected": ("static", "protected paths"),
    "fault-crash": ("train", "deliberate crash in train"),
    "fault-loop": ("train", "timed out"),
    "fault-oom": ("train", "out of memory"),
    "fault-invalid-replay": ("replay", "invalid output"),
    # the trust boundary: what a hostile candidate leaves behind fails that candidate, never the run
    "fault-dot-git": ("static", "protected paths"),
    "fault-top-level": ("static", "adds top-level"),
    "fault-gitattributes": ("implement", "git attributes"),
    "fault-output-link": ("train", "symbolic link"),
    "fault-foreign-base": ("train", "base model"),
}


def test_each_fault_is_rejected_at_its_stage_with_its_reason(tmp_path: Path) -> None:
    run = tmp_path / "faults"
    config = tiny_config(run, generations=1, candidates=len(EXPECTED) + 2, noise_reruns=0, control="none",
                         skills=[str(FAULT_SKILLS)],
                         # 1.5 GB: the scripted training needs a few hundred MB, and the unbounded allocator reaches
                         # the limit in seconds even on a busy machine (at 4 GB it took 30 s under the full suite)
                         sandbox={"backend": "bwrap", "memory_mb": 1500, "train_timeout_s": 30},
                         # two worker processes: a crash, an OOM or a timeout inside a worker's backtest is
                         # that candidate's failure, not a lost worker (and the 30 s loop overlaps the others)
                         executor={"kind": "local", "parallel": 2, "retries": 1})
    # Scripted training (tests/scripted_harness keeps the statements these faults anchor on): what is tested is
    # how the loop fails a broken candidate, not GRPO, and an honest training fits well inside a 30 s limit.
    res = meta_agent("evolve", "--config", str(config), data_dir=tmp_path / "data", timeout=1500, scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    verdicts = {tuple(v["skills"]): v for v in journal(run, VerdictRecorded)}
    for skill, (stage, text) in EXPECTED.items():
        v = verdicts[(skill,)]
        assert v["verdict"] == "rejected", skill
        assert v["stage"] == stage, f"{skill}: rejected at {v['stage']} ({v['reason']})"
        assert text in v["reason"], f"{skill}: {v['reason']}"
    protected_id = verdicts[("fault-protected",)]["cand_id"]
    protected = [s for s in journal(run, StageDone) if s["cand_id"] == protected_id and s["stage"] == "static"]
    assert "before running anything" in protected[0]["reason"]
    assert (run / "summary.md").is_file(), "the run finished despite the broken candidates"
