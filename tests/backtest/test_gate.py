"""The promotion gate's decision core, one row per rule: what evidence each kind needs, and every reason
a candidate is turned down."""

from __future__ import annotations

import random
from typing import Any

import pytest

from meta_agent.backtest.gate import GateSettings, ci_level, decide
from meta_agent.backtest.labels import LabelEvidence
from meta_agent.backtest.replay import MeasuredKind, ReplayEvidence
from meta_agent.backtest.static import StaticEvidence
from meta_agent.backtest.surfaces import ChangeSurfaces
from meta_agent.verdicts import StageResult, TrainEvidence

S = GateSettings()


def _replay(kind: MeasuredKind, new_labels: list[LabelEvidence] | None = None) -> StageResult:
    """A replay stage's evidence, built as the replay stage builds it (the model, dumped), so a field renamed on
    either side fails here instead of passing unread."""
    evidence = ReplayEvidence(
        rollouts=40, probes=8, reward_flips=3, accepted_changed=0, rejected_gained=0, rejected_lost=3,
        weights_changed=0, probes_gained=[], probes_rewarded_main=2, probes_rewarded_candidate=0,
        agreement_main=0.8, agreement_candidate=0.9, new_labels=new_labels or [], measured_kind=kind,
        kind_reason=f"measured {kind}")
    return StageResult(stage="replay", passed=True, reason="ok", metrics=evidence.model_dump(mode="json"))


def _label(name: str, passed: bool, reason: str) -> LabelEvidence:
    return LabelEvidence(label=name, flagged=10, flagged_rejected=9, rejected=20, total=40, precision=0.9,
                         base_rate=0.5, lift=0.4, recall=0.45, p_value=0.01, passed=passed, reason=reason)


def _train(delta: float, low: float, high: float, *, reward: float = 0.5, control_reward: float = 0.5,
           invalid: float = 0.0, control_invalid: float = 0.0, paid: float = 0.0, control_paid: float = 0.1
           ) -> StageResult:
    evidence = TrainEvidence(
        selection_score=0.5 + delta, control_score=0.5, delta=delta, ci=[low, high], ci_level=0.975,
        train_reward=reward, control_train_reward=control_reward, invalid_share=invalid,
        control_invalid_share=control_invalid, paid_rejected_share=paid, control_paid_rejected_share=control_paid,
        checkpoint="/runs/r/gen-000/cand-0/checkpoint", tasks=30)
    return StageResult(stage="train", passed=True, reason="ok", metrics=evidence.model_dump(mode="json"))


def _static(*training: str) -> StageResult:
    surfaces = ChangeSurfaces(replayed=["harness/math/rewards.py"], training=list(training))
    evidence = StaticEvidence(changed=["harness/math/rewards.py"], surfaces=surfaces)
    return StageResult(stage="static", passed=True, reason="ok", metrics=evidence.model_dump(mode="json"))


OK = [StageResult(stage="implement", passed=True, reason="ok"), _static()]
FLAT = _train(0.0, -0.1, 0.1, reward=0.4)
"""A validity fix's own training: no better on the sealed score, less reward paid than the control."""
GOOD_LABEL = _label("hedge", True, "hedge: lift +0.50")
RANDOM_LABEL = _label("coin", False, "coin: precision 0.91 is not above the base rate 0.98")

ROWS = [
    # (name, declared, stages, noise floor, verdict, stage, text in reason)
    ("a failed stage decides", "performance",
     [*OK[:1], StageResult(stage="static", passed=False, reason="selftest failed: boom")], 0.0,
     "rejected", "static", "selftest failed"),
    ("a closed reward hole, trained, that pays no more rejected rollouts", "validity",
     [*OK, _replay("validity"), FLAT], 0.0, "promoted", "gate", "validity change"),
    ("nothing merges untrained, a validity fix included", "validity", [*OK, _replay("validity")], 0.0,
     "rejected", "gate", "nothing reaches main untrained"),
    ("a reward honest in replay that pays rejected rollouts once it trains", "validity",
     [*OK, _replay("validity"), _train(0.0, -0.1, 0.1, reward=0.9, paid=0.8, control_paid=0.1)], 0.0,
     "rejected", "gate", "paid 80% of the rollouts, all rejected by the sealed verifier"),
    ("a validity fix that also changes RL settings is judged as performance", "validity",
     [OK[0], _static("harness.yaml: rl.learning_rate", "harness/train.py"), _replay("validity"), FLAT], 0.0,
     "rejected", "gate", "also changes what only training shows (harness.yaml: rl.learning_rate"),
    ("evidence beats the label: measured validity, declared performance", "performance",
     [*OK, _replay("validity"), FLAT], 0.0, "promoted", "gate", "declared performance, measured validity"),
    ("a diagnostic with lift is promoted", "validity",
     [*OK, _replay("diagnostic", new_labels=[GOOD_LABEL]), FLAT], 0.0, "promoted", "gate", "hedge: lift"),
    ("a diagnostic that also changes training code is judged as performance", "validity",
     [OK[0], _static("harness/trainer.py"), _replay("diagnostic", new_labels=[GOOD_LABEL]), FLAT], 0.0,
     "rejected", "gate", "measured a diagnostic change, but its diff also changes"),
    ("a random diagnostic is not", "validity", [*OK, _replay("diagnostic", new_labels=[RANDOM_LABEL]), FLAT], 0.0,
     "rejected", "gate", "without evidence"),
    ("shaping labelled validity must train", "validity", [*OK, _replay("performance")], 0.0,
     "rejected", "gate", "declared validity, measured performance"),
    ("a real improvement is promoted", "performance", [*OK, _replay("performance"), _train(0.2, 0.05, 0.35)], 0.05,
     "promoted", "gate", "paired delta +0.200"),
    ("CI touching zero", "performance", [*OK, _replay("performance"), _train(0.2, -0.01, 0.4)], 0.0,
     "rejected", "gate", "CI lower bound"),
    ("within the noise floor", "performance", [*OK, _replay("performance"), _train(0.05, 0.01, 0.1)], 0.06,
     "rejected", "gate", "noise floor"),
    ("reward up, sealed score not", "performance",
     [*OK, _replay("performance"), _train(0.0, -0.1, 0.1, reward=0.9, control_reward=0.4)], 0.0,
     "rejected", "gate", "training reward rose"),
    ("more rollouts flagged invalid by the trusted diagnostics", "performance",
     [*OK, _replay("performance"), _train(0.3, 0.1, 0.5, invalid=0.4, control_invalid=0.1)], 0.0,
     "rejected", "gate", "flagged invalid by the trusted diagnostics"),
]


@pytest.mark.parametrize(("name", "declared", "stages", "noise", "verdict", "stage", "text"), ROWS,
                         ids=[r[0] for r in ROWS])
def test_the_gate(name: str, declared: Any, stages: list[StageResult], noise: float, verdict: str, stage: str,
                  text: str) -> None:
    v = decide("run/0-0", declared, stages, noise, S)
    assert (v.verdict, v.stage) == (verdict, stage), v.reason
    assert text in v.reason
    assert v.declared_kind == declared


def test_the_measured_kind_is_recorded_beside_the_declared_one() -> None:
    v = decide("run/0-0", "validity", [*OK, _replay("performance"), _train(0.2, 0.05, 0.3)], 0.0, S)
    assert (v.kind, v.declared_kind) == ("performance", "validity")


def test_the_ci_level_spends_the_runs_false_merge_budget_over_every_test() -> None:
    assert ci_level(S, 1) == pytest.approx(0.95)
    assert ci_level(S, 4) == pytest.approx(1 - 0.05 / 4)
    assert ci_level(S, 4, generations=3) == pytest.approx(1 - 0.05 / 12)


def test_null_candidates_across_a_whole_run_merge_at_most_at_the_family_rate() -> None:
    """A run of G generations x K candidates that change nothing: with the level spread over the run, the
    chance that any of them merges stays under family_alpha (before, each generation spent it anew)."""
    from meta_agent.stats import paired_bootstrap_ci

    rng = random.Random(7)
    generations, k, tasks, runs = 4, 2, 40, 200
    merged_any = 0
    for run in range(runs):
        merged = False
        for test in range(generations * k):
            control = [float(rng.random() < 0.4) for _ in range(tasks)]
            cand = [float(rng.random() < 0.4) for _ in range(tasks)]
            ci = paired_bootstrap_ci(cand, control, seed=run * 100 + test, level=ci_level(S, k, generations))
            stages = [*OK, _replay("performance"), _train(ci.mean, ci.low, ci.high)]
            merged |= decide("run/0-0", "performance", stages, 1 / tasks, S).promoted
        merged_any += merged
    # Measured with this seed: 7 of 200 (3.5%); a level spread over one generation's K only: 22 of 200 (11%).
    assert merged_any / runs <= S.family_alpha + 0.02, f"{merged_any} of {runs} null runs merged something"


def test_train_evidence_with_a_renamed_or_missing_key_is_refused_not_read_as_missing() -> None:
    """The train stage and the gate share one model: a key renamed on one side fails loudly on the other."""
    from pydantic import ValidationError

    metrics = dict(FLAT.metrics)
    metrics["delta_mean"] = metrics.pop("delta")
    with pytest.raises(ValidationError):
        decide("r/0-0", "performance", [*OK, _replay("performance"), FLAT.model_copy(update={"metrics": metrics})],
               0.0, S)
