from harness.diagnostics import repetition_share
from harness.math.diagnostics import answer_not_extractable, format_violation
from harness.math.rewards import correctness
from tests.conftest import make_rollout


def test_correct_answer_line_is_rewarded() -> None:
    assert correctness(make_rollout("3 plus 4 is 7.\nAnswer: 7")) == 1.0


def test_wrong_answer_gets_nothing() -> None:
    assert correctness(make_rollout("Answer: 8")) == 0.0


def test_missing_answer_line_is_a_format_violation() -> None:
    r = make_rollout("it is 7")
    assert format_violation(r)
    assert not answer_not_extractable(r)


def test_no_number_is_not_extractable() -> None:
    assert answer_not_extractable(make_rollout("I cannot say"))


def test_repetition_share_separates_loops_from_prose() -> None:
    assert repetition_share("the cat sat " * 10) > 0.5
    assert repetition_share("First add three and four, which gives seven, so the final answer is 7 here.") < 0.2
