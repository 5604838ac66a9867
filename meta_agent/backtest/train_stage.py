"""Stage 3, train: a short run of the candidate from the generation's starting policy with the control's
seed and steps, then the sealed evaluator on the selection split, paired per task with the control.
Every candidate that passes its replay trains here, whatever kind of change it is.

What is compared never comes from the candidate's own word: its rollouts are labelled by *main's*
diagnostics as of the generation's start (plus labels promoted earlier) and by the sealed verifier
(the share of verifier-rejected rollouts its own reward paid), its compute is counted from what it
left (`backtest/compute.py`: completions written, tokens re-counted here, the optimizer's step
counters) against what main's settings allow, and its score is the sealed evaluator's.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git

from meta_agent.backtest.compute import (
    AGENT_TURN_TOKENS,
    AGENT_TURNS,
    budget_of,
    multi_turn,
    overspent,
    settings_of,
    spent,
    turn_budget,
)
from meta_agent.domains import Domain, EvalResult
from meta_agent.eval_memo import evaluate_memoized, reuse_note
from meta_agent.harness_runner import HarnessError
from meta_agent.stats import paired_bootstrap_ci
from meta_agent.training import TrainedRun, train_commit
from meta_agent.verdicts import StageResult, TrainEvidence


@dataclass
class Control:
    """What the candidate is compared with: main's run of this generation."""

    run: TrainedRun
    eval: EvalResult
    invalid_share: float


def invalid_share(run: TrainedRun, labels: tuple[str, ...] | list[str]) -> float:
    return sum(1 for r in run.rollouts if set(r.labels) & set(labels)) / max(1, len(run.rollouts))


def paid_rejected_share(run: TrainedRun) -> float:
    """Share of a run's rollouts that its reward paid although the sealed verifier rejects them: what a reward
    hole costs in training, measured where training happens (a replay of stored rollouts cannot see a reward
    that behaves one way when replayed and another when trained)."""
    return sum(1 for r in run.rollouts if r.verified is False and r.reward > 0) / max(1, len(run.rollouts))


@functools.lru_cache(maxsize=4)
def _tokenizer(root_policy: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(root_policy)


def compute_problem(trained: TrainedRun, control: TrainedRun, repo: git.Repo, main_commit: str, steps: int,
                    root_policy: Path) -> tuple[str | None, dict[str, Any]]:
    """(why the candidate spent more than main's settings allow, or None; the counts, for the journal)."""
    tokenizer = _tokenizer(str(root_policy))
    cand = spent(trained.rollouts, trained.checkpoint, tokenizer)
    ctrl = spent(control.rollouts, control.checkpoint, tokenizer)
    budget = budget_of(repo, main_commit, steps)
    problem = overspent(cand, ctrl, budget, steps, multi_turn(control.rollouts))
    return problem, {"compute": cand.model_dump(), "control_compute": ctrl.model_dump(),
                     "budget_tokens": budget.tokens if budget else None}


def completions_per_step(repo: git.Repo, commit: str) -> int:
    """Prompts per step x completions per prompt, read (as data) from the commit's harness.yaml."""
    rl = settings_of(repo, commit)
    try:
        return int(rl.get("prompts_per_step", 2)) * int(rl.get("num_generations", 4))
    except (TypeError, ValueError):
        return 0


def grown_budget(repo: git.Repo, commit: str, main_commit: str) -> str | None:
    """Why the candidate's settings ask for more generation than main's, before it trains: the settings alone
    decide this, so the candidate is refused without spending its training.

    Completions per step may be re-split, not grown. A multi-turn agent's episodes may generate up to turns x
    tokens per turn; per step that cap may not grow past twice main's, the room the count after training gives
    multi-turn runs (`compute.overspent`). A candidate could still generate more than its settings say (its
    harness code is its own): the count after training judges that."""
    cand_per_step, control_per_step = completions_per_step(repo, commit), completions_per_step(repo, main_commit)
    if cand_per_step > control_per_step > 0:
        return (f"spends more generation compute than the control: {cand_per_step} completions per step vs "
                f"{control_per_step}; a candidate may re-split the budget, not grow it")
    main_turns = turn_budget(settings_of(repo, main_commit, "domain_settings"))
    if main_turns is None or cand_per_step <= 0:
        return None
    cand_turns = turn_budget(settings_of(repo, commit, "domain_settings")) or (AGENT_TURNS, AGENT_TURN_TOKENS)
    cand_cap = cand_per_step * cand_turns[0] * cand_turns[1]
    main_cap = control_per_step * main_turns[0] * main_turns[1]
    if cand_cap > 2 * main_cap:
        return (f"may generate {cand_cap:,} tokens a step ({cand_per_step} episodes x {cand_turns[0]} turns x "
                f"{cand_turns[1]} tokens), over twice main's {main_cap:,} ({control_per_step} x {main_turns[0]} x "
                f"{main_turns[1]}); a candidate may re-split the budget, not grow it")
    return None


def _compute_problem(trained: TrainedRun, steps: int, cand_per_step: int) -> str | None:
    written = len(trained.output.rollouts)
    if cand_per_step and written != steps * cand_per_step:
        return (f"wrote {written} rollouts for {steps} steps of {cand_per_step} completions (expected "
                f"{steps * cand_per_step}): its training or its log is not what its settings say")
    covered = {r.step for r in trained.output.rollouts}
    if len(covered) != steps:
        return f"its rollouts cover {len(covered)} optimizer steps, {steps} were asked for"
    return None


def run_train_stage(
    *,
    repo: git.Repo,
    commit: str,
    main_commit: str,
    domain: Domain,
    control: Control,
    guard_labels: list[str],
    train_kwargs: dict[str, Any],
    out_dir: Path,
    work_dir: Path,
    eval_limit: int | None,
    root_policy: Path,
    seed: int,
    level: float = 0.95,
    on_eval: Callable[[int], None] | None = None,
    memo_dir: Path | None = None,
    run_dir: Path | None = None,
) -> tuple[StageResult, TrainedRun | None, EvalResult | None]:
    started = time.monotonic()
    steps = int(train_kwargs["steps"])
    if (grown := grown_budget(repo, commit, main_commit)) is not None:
        return StageResult(stage="train", passed=False, reason=grown, seconds=time.monotonic() - started), None, None
    try:
        trained = train_commit(repo=repo, commit=commit, domain=domain, out_dir=out_dir, work_dir=work_dir,
                               diagnose_commit=main_commit, **train_kwargs)
    except HarnessError as e:
        return StageResult(stage="train", passed=False, reason=e.reason, seconds=time.monotonic() - started), \
            None, None
    problem = _compute_problem(trained, steps, completions_per_step(repo, commit))
    counted: dict[str, Any] = {}
    if not problem:
        problem, counted = compute_problem(trained, control.run, repo, main_commit, steps, root_policy)
    if problem:
        return StageResult(stage="train", passed=False, reason=problem, seconds=time.monotonic() - started,
                           metrics=counted), trained, None
    result = evaluate_memoized(domain, trained.checkpoint, "selection", on_eval, memo_dir=memo_dir, limit=eval_limit,
                               root=root_policy)
    control_scores = control.eval.per_task()
    ids = [r.task_id for r in result.results]
    paired = paired_bootstrap_ci([result.per_task()[i] for i in ids], [control_scores[i] for i in ids], seed=seed,
                                 level=level)
    evidence = TrainEvidence(
        selection_score=result.score.mean, control_score=control.eval.score.mean, delta=paired.mean,
        ci=[paired.low, paired.high], ci_level=level, train_reward=trained.report.reward_mean,
        control_train_reward=control.run.report.reward_mean, guard_labels=guard_labels,
        invalid_share=invalid_share(trained, guard_labels),
        control_invalid_share=invalid_share(control.run, guard_labels),
        paid_rejected_share=paid_rejected_share(trained),
        control_paid_rejected_share=paid_rejected_share(control.run), **counted,
        checkpoint=str(trained.checkpoint), tasks=len(ids), train_seconds=trained.output.seconds,
        eval_seconds=result.wall_time)
    metrics = evidence.model_dump(mode="json")
    return StageResult(
        stage="train", passed=True, seconds=time.monotonic() - started, metrics=metrics,
        reason=f"selection {result.score.mean:.3f} vs control {control.eval.score.mean:.3f}; "
               f"paired delta {paired.mean:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}] ({level:.1%} CI)"
               + reuse_note(result, run_dir),
    ), trained, result
