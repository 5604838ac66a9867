"""Training compute of an evolve run, read from the training runs it left: who trained how much.

Every GRPO run writes `metrics.jsonl` (one line per optimizer step) and `rollouts.jsonl` (one line per
sampled completion) in its output folder, so compute is counted from files, not from settings: a
harness that changed its group size or steps is counted as it ran.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from meta_agent.evolve.search_budget import search_runs


class Compute(BaseModel):
    steps: int = 0
    completions: int = 0
    runs: int = 0

    def __add__(self, other: Compute) -> Compute:
        return Compute(steps=self.steps + other.steps, completions=self.completions + other.completions,
                       runs=self.runs + other.runs)


def _lines(path: Path) -> int:
    if not path.is_file():
        return 0
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def of_training(out_dir: Path) -> Compute:
    """One training run's compute (its output folder)."""
    return Compute(steps=_lines(out_dir / "metrics.jsonl"), completions=_lines(out_dir / "rollouts.jsonl"), runs=1)


class EvolveCompute(BaseModel):
    """The three budgets of one evolve run: the evolved policy's own training, the static arm's, and what
    the search spent besides (candidate backtests, noise-floor reruns)."""

    evolved: Compute
    static: Compute
    search: Compute


def of_evolve(run_dir: Path) -> EvolveCompute:
    """Counted for a run with the static control arm (`control: static`), as the benchmark runs it."""
    gens = sorted(p for p in run_dir.glob("gen-*") if p.is_dir())
    evolved, static, search = Compute(), Compute(), Compute()
    for g, gen in enumerate(gens):
        main = gen / "main"
        if (main / "metrics.jsonl").is_file():
            evolved += of_training(main)
        # The static arm reuses main's run for a generation in which main was still the initial harness.
        own = run_dir / "static" / f"g{g}"
        static += of_training(own if (own / "metrics.jsonl").is_file() else main)
        for out in search_runs(gen):  # backtests, noise reruns, confirmation rungs: what `search_steps` bounds
            if out.exists():
                search += of_training(out)
    return EvolveCompute(evolved=evolved, static=static, search=search)
