"""The sealed evaluator scores a policy with a CI, and its splits never overlap training."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from meta_agent.domains.math import MathDomain, answers_match, extract_answer
from meta_agent.domains.settings import MathSettings
from meta_agent.policy import PolicyError, load_for_inference
from meta_agent.training import TrainedRun

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def test_eval_of_the_tiny_policy_returns_accuracy_with_a_ci(tiny_policy: Path, small_math: MathDomain) -> None:
    result = small_math.evaluate(tiny_policy, "selection", limit=6)
    assert result.score.n == 6 == len(result.results)
    assert 0.0 <= result.score.low <= result.score.mean <= result.score.high <= 1.0
    assert all(r.detail.startswith("predicted") for r in result.results)


def test_eval_loads_a_trained_lora_checkpoint(
    trained: tuple[git.Repo, TrainedRun, Path], tiny_policy: Path, small_math: MathDomain
) -> None:
    _, run, _ = trained
    result = small_math.evaluate(run.checkpoint, "test", limit=3, root=tiny_policy)
    assert result.score.n == 3


def test_a_checkpoint_claiming_another_base_is_refused(
    trained: tuple[git.Repo, TrainedRun, Path], tmp_path: Path
) -> None:
    _, run, _ = trained
    with pytest.raises(PolicyError, match="claims base model"):
        load_for_inference(run.checkpoint, root=tmp_path)


def test_sealed_splits_share_no_question_with_training() -> None:
    d = MathDomain()
    train = {t.prompt for t in d.tasks("train")}
    for split in ("selection", "test"):
        assert not train & {t.prompt for t in d.tasks(split)}
    assert not {t.prompt for t in d.tasks("selection")} & {t.prompt for t in d.tasks("test")}


def test_splits_are_deterministic() -> None:
    assert [t.id for t in MathDomain().tasks("selection")] == [t.id for t in MathDomain().tasks("selection")]


def test_a_sealed_level_mix_draws_the_sealed_splits_at_those_shares_and_leaves_train_alone() -> None:
    mixed = MathDomain(MathSettings(test_size=50, selection_size=20, sealed_levels={1: 2, 2: 2, 3: 1}))
    levels = [t.difficulty for t in mixed.tasks("test")]
    assert len(levels) == 50 and (levels.count(1), levels.count(2), levels.count(3), levels.count(4)) == (20, 20, 10, 0)
    assert {t.difficulty for t in mixed.tasks("selection")} == {1, 2, 3}
    assert [t.id for t in mixed.tasks("train")] == [t.id for t in MathDomain().tasks("train")], "train is unchanged"
    assert not {t.prompt for t in mixed.tasks("train")} & {t.prompt for t in mixed.tasks("test")}
    default = [t.difficulty for t in MathDomain(MathSettings(test_size=60)).tasks("test")]
    assert (default.count(1), default.count(4)) == (21, 6), "without a mix: the train split's shares"
    for bad in ({5: 1.0}, {1: -1.0}, {1: 0.0}, {1: float("nan")}):
        with pytest.raises(ValueError, match="sealed_levels"):
            MathSettings(sealed_levels=bad)


@pytest.mark.parametrize(
    ("completion", "gold", "ok"),
    [("so\nAnswer: 12", "12", True), ("12.0", "12", True), ("Answer: 1,200", "1200", True),
     ("Answer: 13", "12", False), ("no idea", "12", False)],
)
def test_verifier(completion: str, gold: str, ok: bool) -> None:
    assert answers_match(extract_answer(completion), gold) is ok


def test_the_math_evaluator_batches_64_unless_configured() -> None:
    """64 a batch answers as 16 did (test_greedy_decode) and is faster on an H200 and on a 2-core CPU."""
    from meta_agent.domains.math import MathSettings

    assert MathSettings().eval_batch_size == 64
    assert MathSettings(eval_batch_size=16).eval_batch_size == 16  # a configured batch (an older run's) is kept
