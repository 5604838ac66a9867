"""The generation's and the run's time to go, from the pace this process has kept (evolve/eta.py)."""

from __future__ import annotations

import io
import time
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from meta_agent.cli import app
from meta_agent.evolve.eta import Etas
from meta_agent.harness_runner import StepSeen
from tests.foundation.test_way_back_in import _run as a_started_run


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_generation_and_run_eta_follow_the_pace_and_a_resume_starts_its_own() -> None:
    clock = Clock()
    etas = Etas(total=12, per_generation=4, clock=clock)
    assert etas.text() == "", "no pace before a step: no guess"
    etas.phase("gen 0: training the policy under main (1 steps)")
    clock.now = 10
    etas.advance()
    assert etas.text() == " · gen 0 eta 30 s · run eta 1 min 50 s"
    clock.now = 40
    etas.advance(3)
    etas.phase("gen 1: evaluating main on the sealed selection split")
    assert etas.generation_left() == 40 and etas.run_left() == 80
    etas.phase("gen 1: candidate 0: implementing")  # the same generation: its start stays
    etas.advance(5)  # repairs trained more than the plan: no negative eta for the generation
    assert etas.generation_left() is None and etas.text().startswith(" · run eta")

    resumed = Etas(total=12, per_generation=4, clock=clock)
    resumed.resumed_at(6)  # what an earlier process trained is where the run is, not this one's pace
    assert resumed.run_left() is None
    clock.now += 5
    resumed.advance()
    assert resumed.run_left() == 25


def test_a_non_terminal_run_prints_both_etas_and_status_shows_the_generations(tmp_path: Path) -> None:
    from meta_agent.commands.evolve import RichReporter
    from meta_agent.config import EvolveConfig

    run = a_started_run(tmp_path)
    cfg = EvolveConfig.model_validate({"domain": "math", "run_dir": str(run), "generations": 2, "train_steps": 4})
    out = io.StringIO()
    reporter = RichReporter(Console(file=out, width=300), cfg)
    reporter.phase("gen 0: training the policy under main (4 steps)")
    time.sleep(0.05)
    reporter.training_step(StepSeen(done=1, new=1, steps=4, seconds=3.0, reward=0.5))
    line = next(x for x in out.getvalue().splitlines() if "step 1/4" in x)
    assert "gen 0 eta" in line and "run eta" in line, line
    said = " ".join(CliRunner().invoke(app, ["status", str(run)], terminal_width=200).output.split())
    assert "to go (this generation: about" in said, said
