"""The search's step budget (`search_steps`): GRPO steps a run may spend on the search, beside training the
policy under main.

Search steps are those of candidate backtests, confirmation rungs (the candidate's and the control's longer
run) and noise-floor reruns, counted from the runs on disk: each run that started, at the steps it was given
or the lines of its `metrics.jsonl` (one per optimizer step, as the efficacy benchmark counts compute),
whichever is more. The budget is checked where a search training is decided:

- before a generation proposes: it asks the proposer for only as many candidates as the steps left pay a
  backtest for (none: the generation trains main and proposes nothing, its reason journaled);
- before the confirmation rung: only as many candidates as fit beside the longer control go to it.

Noise reruns and the re-test of a winner combined with those merged before it (`cand-K+combined`) count
but are not cut: the gate needs the floor, and a winner is merged only tested together with the others. So
a run spends at most the budget plus those, when they come after the budget ran out. Every decision is
taken from runs that have finished by then, so a resumed run takes the same ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from meta_agent.config import EvolveConfig


def search_runs(gen: Path) -> list[Path]:
    """The output folders of one generation's search trainings (`gen` is RUN/gen-NNN), finished or not."""
    return [*sorted(gen.glob("cand-*/train")), *sorted(gen.glob("noise-*")), *_rung_runs(gen)]


def _rung_runs(gen: Path) -> list[Path]:
    return [*sorted(gen.glob("cand-*/confirm")), gen / "confirm-control"]


def steps_of(out_dir: Path) -> int:
    """Optimizer steps a training run logged (0 when it has not started)."""
    path = out_dir / "metrics.jsonl"
    if not path.is_file():
        return 0
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def steps_spent(cfg: EvolveConfig, run_dir: Path, leave_out: Iterable[Path] = ()) -> int:
    """Search steps the run has spent, without the runs in `leave_out` (those being decided). A run that
    started counts the steps it was given or the steps it logged, whichever is more: the log is the harness's,
    and one that logs fewer steps than it trained must not buy its search more."""
    skip = {p.resolve() for p in leave_out}
    spent = 0
    for gen in sorted(run_dir.glob("gen-*")):
        rung = set(_rung_runs(gen))
        for out in search_runs(gen):
            if out.exists() and out.resolve() not in skip:
                spent += max(cfg.confirm_steps if out in rung else cfg.steps, steps_of(out))
    return spent


def proposal_slots(cfg: EvolveConfig, run_dir: Path) -> tuple[int, str]:
    """(candidates this generation may propose, why fewer than `candidates`, else ""): each backtest costs
    `steps`, so no more than the steps left pay for. Called before the generation's candidates train."""
    if cfg.search_steps is None:
        return cfg.candidates, ""
    left = cfg.search_steps - steps_spent(cfg, run_dir)
    slots = max(0, min(cfg.candidates, left // cfg.steps))
    if slots == cfg.candidates:
        return slots, ""
    return slots, (f"the search-step budget ({cfg.search_steps} GRPO steps) has {max(left, 0)} left, "
                   f"{'enough for ' + str(slots) if slots else 'not enough for one'} backtest(s) of {cfg.steps} "
                   f"steps")


def confirmable(cfg: EvolveConfig, run_dir: Path, gen: Path, chosen: list[int]) -> list[int]:
    """Of the candidates chosen for the confirmation rung, those its budget pays for beside the longer control
    (each run `confirm_steps`), best first; this generation's own rung is left out of what was spent, so a
    resumed rung keeps its choice."""
    if cfg.search_steps is None or not chosen:
        return chosen
    rung = [*gen.glob("cand-*/confirm"), gen / "confirm-control"]
    left = cfg.search_steps - steps_spent(cfg, run_dir, leave_out=rung)
    fits = left // cfg.confirm_steps - 1  # the control's longer run first
    return chosen[:max(0, fits)]
