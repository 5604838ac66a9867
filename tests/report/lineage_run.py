"""A small finished run (tests/review/small_run.py) completed with what the lineage page reads beyond the
candidates: each generation's result, the final comparison and the training reports."""

from __future__ import annotations

from pathlib import Path

from meta_agent.eventlog import EventLog
from meta_agent.journal import FinalEval, GenerationDone
from tests.review.small_run import Plan, build

HOSTILE = "<script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=alert(1)>"
PLANS = [Plan(0, 0, True), Plan(0, 1, False, "replay"), Plan(1, 0, False, title=HOSTILE), Plan(1, 1, True),
         Plan(1, 2, False)]


def lineage_run(root: Path) -> Path:
    """The run dir; gen-001's main and candidate 1-0 have a report.html, the others not."""
    run_dir, repo = build(root, PLANS, finished=False)
    log = EventLog(run_dir)
    main = repo.commit("main").hexsha
    for g, score in ((0, 0.40), (1, 0.52)):
        log.append(GenerationDone(
            run_id=run_dir.name, gen=g, main_before=main, main_after=main, policy="tiny", next_policy="tiny",
            control_score=score, control_low=score - 0.08, control_high=score + 0.08, dominant=["truncated"],
            history="", noise_floor=0.05, time={}), key=f"g{g}/done")
    log.append(FinalEval(evolved_policy="evolved", evolved={"mean": 0.61, "low": 0.5, "high": 0.7, "n": 6},
                         static_policy="static", static={"mean": 0.45, "low": 0.35, "high": 0.55, "n": 6},
                         paired={"mean": 0.16, "low": 0.04, "high": 0.28, "n": 6}), key="final/compare")
    gen1 = run_dir / "gen-001"
    for report in (gen1 / "main" / "report.html", gen1 / "cand-0" / "train" / "report.html"):
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text("<html>report</html>")
    return run_dir
