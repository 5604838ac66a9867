"""What the gate reads beside the replay: which parts of the harness a diff touches (a validity fix may touch
only what the replay can judge), and a run's compute counted from what it left, never from what it says."""

from __future__ import annotations

import os
from pathlib import Path

import git
import pytest
import torch
from safetensors.torch import save_file

from meta_agent.backtest.compute import OPTIMIZER_STATE, ComputeBudget, Spent, optimizer_steps, overspent
from meta_agent.backtest.surfaces import classify
from tests.conftest import commit_all


def _edit(repo: git.Repo, rel: str, old: str, new: str) -> None:
    path = Path(repo.working_dir) / rel
    path.write_text(path.read_text().replace(old, new, 1))


def test_reward_code_weights_and_tests_are_replayed_settings_and_trainer_are_not(math_harness: git.Repo) -> None:
    base = math_harness.head.commit.hexsha
    _edit(math_harness, "harness/math/rewards.py", "def ", "# stricter\ndef ")
    _edit(math_harness, "harness.yaml", "correctness: 1.0", "correctness: 2.0")
    _edit(math_harness, "tests/test_math.py", "def ", "# more\ndef ")
    replayed_only = commit_all(math_harness, "reward change")
    surfaces = classify(math_harness, base, replayed_only)
    assert surfaces.training == []
    assert "harness/math/rewards.py" in surfaces.replayed and "harness.yaml: rewards.correctness" in surfaces.replayed
    _edit(math_harness, "harness.yaml", "learning_rate: 2.0e-5", "learning_rate: 1.0e-3")
    _edit(math_harness, "harness/math/prompts.py", "def ", "# new prompt\ndef ")
    _edit(math_harness, "harness/replay.py", "def ", "# replays differently\ndef ")
    both = commit_all(math_harness, "and settings")
    assert classify(math_harness, base, both).training == [
        "harness.yaml: rl.learning_rate", "harness/math/prompts.py", "harness/replay.py"]


BUDGET = ComputeBudget(completions_per_step=8, max_completion_length=48, steps=2)
CONTROL = Spent(completions=16, generated_tokens=700, longest_completion=52, optimizer_steps=2)


@pytest.mark.parametrize(("cand", "reason"), [
    (Spent(completions=16, generated_tokens=690, longest_completion=50, optimizer_steps=2), None),
    (Spent(completions=16, generated_tokens=2800, longest_completion=192, optimizer_steps=2),
     "completions of up to 192 tokens; main's settings cap one at 48"),
    (Spent(completions=16, generated_tokens=900, longest_completion=50, optimizer_steps=4),
     "its optimizer took 4 steps; 2 were asked for"),
    (Spent(completions=16, generated_tokens=690, longest_completion=50, optimizer_steps=None),
     "carries no optimizer state"),
])
def test_compute_is_judged_from_what_ran(cand: Spent, reason: str | None) -> None:
    got = overspent(cand, CONTROL, BUDGET, steps=2, multi_turn=False)
    assert (got is None) if reason is None else (got is not None and reason in got), got


def test_a_transcript_domain_is_held_to_twice_the_controls_tokens() -> None:
    control = CONTROL.model_copy(update={"generated_tokens": 5_000, "longest_completion": 900})
    fine = Spent(completions=16, generated_tokens=7_000, longest_completion=1_500, optimizer_steps=2)
    assert overspent(fine, control, BUDGET, steps=2, multi_turn=True) is None
    grown = fine.model_copy(update={"generated_tokens": 20_000})
    assert "over twice the control's" in str(overspent(grown, control, BUDGET, steps=2, multi_turn=True))


def test_the_optimizer_state_is_read_as_tensors_and_anything_else_counts_as_none(tmp_path: Path) -> None:
    save_file({"0.step": torch.tensor([3]), "1.step": torch.tensor([3])}, str(tmp_path / OPTIMIZER_STATE))
    assert optimizer_steps(tmp_path) == 3
    (tmp_path / OPTIMIZER_STATE).write_bytes(b"\x80\x04 a pickle, not safetensors")
    assert optimizer_steps(tmp_path) is None
    (tmp_path / OPTIMIZER_STATE).unlink()
    os.symlink("/etc/hostname", tmp_path / OPTIMIZER_STATE)
    assert optimizer_steps(tmp_path) is None


def test_a_candidate_asking_for_more_completions_per_step_is_refused_before_it_trains(
        math_harness: git.Repo, tmp_path: Path) -> None:
    # Its settings alone decide it: training it first (minutes on SWE) only to refuse it wasted the run's time.
    from meta_agent.backtest.train_stage import grown_budget

    main = math_harness.head.commit.hexsha
    _edit(math_harness, "harness.yaml", "prompts_per_step: 2", "prompts_per_step: 1")
    _edit(math_harness, "harness.yaml", "num_generations: 4", "num_generations: 8")
    resplit = commit_all(math_harness, "one group of 8: the same completions per step")
    assert grown_budget(math_harness, resplit, main) is None
    _edit(math_harness, "harness.yaml", "prompts_per_step: 1", "prompts_per_step: 2")
    grown = commit_all(math_harness, "two groups of 8")
    reason = _refused_untrained(math_harness, grown, main, tmp_path)
    assert "16 completions per step vs 8" in reason and "not grow it" in reason


def _refused_untrained(repo: git.Repo, commit: str, main: str, tmp_path: Path) -> str:
    """The train stage's reason for refusing `commit`, which it must give without training anything."""
    from typing import Any, cast

    from meta_agent.backtest.train_stage import run_train_stage

    untouchable = cast(Any, None)  # training would need these: reaching them fails the test
    result, trained, evaluated = run_train_stage(
        repo=repo, commit=commit, main_commit=main, domain=untouchable, control=untouchable,
        guard_labels=[], train_kwargs={"steps": 2}, out_dir=tmp_path / "out", work_dir=tmp_path / "work",
        eval_limit=None, root_policy=tmp_path, seed=0)
    assert (result.stage, result.passed, trained, evaluated) == ("train", False, None, None)
    assert not (tmp_path / "out").exists()
    return str(result.reason)


def test_an_agent_whose_turns_may_generate_over_twice_mains_is_refused_before_it_trains(tmp_path: Path) -> None:
    # The demo's warm-start bundle raised 3 turns x 48 tokens to 5 x 128, trained for 11 minutes, and was then
    # refused for generating over twice the control's tokens. Its settings already said it may generate 4.4x.
    from meta_agent.backtest.train_stage import grown_budget
    from meta_agent.gitops import init_harness

    swe = init_harness(tmp_path / "harness", "swe")
    main = swe.head.commit.hexsha
    _edit(swe, "harness.yaml", "max_turns: 3", "max_turns: 4")
    _edit(swe, "harness.yaml", "turn_tokens: 48", "turn_tokens: 64")
    within = commit_all(swe, "4 turns of 64 tokens: 256 an episode, under twice main's 144")
    assert grown_budget(swe, within, main) is None
    _edit(swe, "harness.yaml", "max_turns: 4", "max_turns: 5")
    _edit(swe, "harness.yaml", "turn_tokens: 64", "turn_tokens: 128")
    grown = commit_all(swe, "5 turns of 128 tokens")
    reason = _refused_untrained(swe, grown, main, tmp_path)
    assert "5 turns x 128 tokens" in reason and "3 x 48" in reason and "not grow it" in reason, reason
    # A candidate that drops the settings gets the agent's defaults (3 x 48), not a free pass or a crash.
    _edit(swe, "harness.yaml", "  max_turns: 5", "")
    assert grown_budget(swe, commit_all(swe, "no max_turns"), main) is not None  # 3 x 128 = 384 > 288
    _edit(swe, "harness.yaml", "  turn_tokens: 128", "  turn_tokens: [1, 2]")
    assert grown_budget(swe, commit_all(swe, "unreadable turn_tokens"), main) is None  # the run's own check refuses it


def test_a_math_harness_has_no_turn_budget() -> None:
    from meta_agent.backtest.compute import turn_budget

    assert turn_budget({}) is None and turn_budget({"observation_chars": 400}) is None
    assert turn_budget({"max_turns": 2}) == (2, 48)  # the agent's default tokens per turn
    assert turn_budget({"max_turns": "x"}) is None and turn_budget({"turn_tokens": -1}) is None
    assert turn_budget({"max_turns": 5.0, "turn_tokens": "128"}) == (5, 128)  # what the harness's model accepts
