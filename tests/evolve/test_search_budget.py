"""`search_steps`: a bound on the GRPO steps a run spends on its search, so two proposers can be compared at the
same compute (the efficacy benchmark gives its search and its random control the same one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.efficacy_lib.compute import of_evolve
from meta_agent.config import EvolveConfig
from meta_agent.eventlog import EventLog
from meta_agent.evolve.search_budget import confirmable, proposal_slots, steps_of, steps_spent
from meta_agent.journal import GenerationDone, Proposed
from meta_agent.journal_keys import gen_key
from tests.conftest import journal
from tests.evolve.conftest import meta_agent, tiny_config


def _trained(out: Path, steps: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.jsonl").write_text("".join(f'{{"step": {i}}}\n' for i in range(steps)))


def _cfg(**kw: object) -> EvolveConfig:
    return EvolveConfig.model_validate({"domain": "math", "candidates": 3, "train_steps": 4, "confirm_steps": 8,
                                        **kw})


def test_a_generation_proposes_only_the_backtests_its_steps_left_pay_for(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _trained(run / "gen-000" / "noise-0", 4)
    _trained(run / "gen-000" / "cand-0" / "train", 4)
    _trained(run / "gen-000" / "cand-1" / "train", 4)
    _trained(run / "gen-000" / "main", 4)  # main's own training is not search
    assert steps_spent(_cfg(), run) == 12
    assert proposal_slots(_cfg(), run) == (3, ""), "no budget: every slot"
    assert proposal_slots(_cfg(search_steps=100), run) == (3, "")
    slots, why = proposal_slots(_cfg(search_steps=21), run)
    assert slots == 2 and "9 left" in why and "search-step budget (21" in why
    slots, why = proposal_slots(_cfg(search_steps=12), run)
    assert slots == 0 and "not enough for one" in why


def test_a_search_run_that_logs_fewer_steps_than_it_was_given_does_not_buy_the_search_more(tmp_path: Path) -> None:
    # metrics.jsonl is written by the harness under test: a run that trained 4 steps and logged 1, or started
    # and logged nothing, still spent the 4 it was given; one that logged more than it was given spent those.
    run = tmp_path / "run"
    _trained(run / "gen-000" / "cand-0" / "train", 1)
    (run / "gen-000" / "cand-1" / "train").mkdir(parents=True)
    _trained(run / "gen-000" / "noise-0", 6)
    _trained(run / "gen-000" / "confirm-control", 2)
    assert steps_spent(_cfg(), run) == 4 + 4 + 6 + 8
    assert proposal_slots(_cfg(search_steps=24), run)[0] == 0


def test_the_confirmation_rung_takes_only_what_fits_beside_its_control_and_keeps_its_choice_on_resume(
        tmp_path: Path) -> None:
    run = tmp_path / "run"
    gen = run / "gen-000"
    for k in range(3):
        _trained(gen / f"cand-{k}" / "train", 4)
    cfg = _cfg(search_steps=12 + 8 * 3)  # the backtests, the control's longer run and two candidates'
    assert confirmable(cfg, run, gen, [2, 0, 1]) == [2, 0]
    assert confirmable(_cfg(search_steps=12 + 8), run, gen, [2, 0, 1]) == [], "not even the control fits beside one"
    assert confirmable(_cfg(), run, gen, [2, 0, 1]) == [2, 0, 1]
    # the rung ran (a kill came after): what it spent is not taken away from its own choice
    _trained(gen / "confirm-control", 8)
    _trained(gen / "cand-2" / "confirm", 8)
    assert confirmable(cfg, run, gen, [2, 0, 1]) == [2, 0]


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="search_steps"):
        _cfg(search_steps=0)


@pytest.mark.slow
def test_a_run_out_of_search_steps_goes_on_training_main_and_proposes_nothing(tmp_path: Path) -> None:
    """Two generations of two candidates, a noise rerun and the confirmation rung would spend 1 + 2 x 2 + 3 x 2
    steps; with a budget of 2 the noise rerun leaves one backtest, for one generation or the other."""
    run_dir = tmp_path / "run"
    config = tiny_config(run_dir, generations=2, candidates=2, train_steps=1, confirm_steps=2, noise_reruns=1,
                         search_steps=2, control="none")
    res = meta_agent("evolve", "--config", str(config), data_dir=tmp_path / "data", scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert of_evolve(run_dir).search.steps <= 2
    assert not list(run_dir.glob("gen-*/confirm-control")), "no confirmation rung fits beside the backtests"
    log, spent, proposed = EventLog(run_dir, repair=False), 0, []
    for g in (0, 1):
        gen = run_dir / f"gen-{g:03d}"
        spent += sum(steps_of(gen / f"noise-{i}") for i in range(1))  # measured before the proposal
        left = 2 - spent
        done = log.done(gen_key(g, "propose"), Proposed)
        assert done is not None
        assert len(done.hypotheses) == min(2, left), f"gen {g}: {left} step(s) left pay for that many backtests"
        if left < 2:
            assert "search-step budget (2 GRPO steps)" in done.failure
        proposed.append(len(done.hypotheses))
        spent += sum(steps_of(out) for out in gen.glob("cand-*/train"))
    assert proposed[0] == 1, "the noise rerun spent 1 of 2 steps: one candidate, not two"
    assert "search-step budget (2 GRPO steps) has 1 left, enough for 1" in res.stdout + res.stderr
    assert len(journal(run_dir, GenerationDone)) == 2, "main trained in both generations"
    assert (run_dir / "gen-001" / "main" / "metrics.jsonl").is_file()
    assert len(list(run_dir.glob("gen-*/cand-*/train/metrics.jsonl"))) <= 1, "one backtest trained at most"
    assert (run_dir / "final" / "evolved-test.json").is_file(), "the run ended with its test comparison"
