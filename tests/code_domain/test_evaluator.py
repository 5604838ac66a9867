"""The sealed evaluator: fixed extraction, pass@1 with a CI, pass@k on request, and splits that keep
hidden tests and sealed problems away from the harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_agent.code_tasks.extract import conversation, extract_program
from meta_agent.code_tasks.passk import pass_at_k
from meta_agent.domains.code import NO_CODE, CodeDomain, CodeEvalResult, CodeSettings
from meta_agent.training import write_train_tasks
from tests.code_domain.conftest import SETTINGS

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def test_extraction_takes_the_block_that_defines_the_function(code_domain: CodeDomain) -> None:
    problem = code_domain.problems("test")[0]
    entry = problem.entry_point
    text = (f"First a helper:\n```python\ndef helper():\n    pass\n```\nThen:\n```python\ndef {entry}(*a):\n"
            f"    return 1\n```\nUsage:\n```python\nprint({entry}(2))\n```")
    program = extract_program(problem, text)
    assert program is not None and f"def {entry}(*a)" in program and "print(" not in program
    assert extract_program(problem, "no code at all") is None


def test_a_bare_body_continues_the_stub_and_a_cut_off_block_still_counts(code_domain: CodeDomain) -> None:
    problem = code_domain.problems("test")[0]
    body = extract_program(problem, "```python\n    return None\n```")
    assert body is not None and body.rstrip().endswith("return None") and f"def {problem.entry_point}" in body
    cut = extract_program(problem, f"```python\ndef {problem.entry_point}(x):\n    return")
    assert cut is not None and cut.endswith("return")


def test_the_fixed_prompt_names_the_output_format(code_domain: CodeDomain) -> None:
    conv = conversation(code_domain.problems("test")[0])
    assert "```python" in conv[0]["content"] and code_domain.problems("test")[0].prompt in conv[1]["content"]


def test_pass_at_k_estimator() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(2, 1, 1) == pytest.approx(0.5)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(3, 1, 5)


def test_evaluate_reports_pass_at_1_with_a_ci_and_pass_at_k(tiny_policy: Path) -> None:
    domain = CodeDomain(SETTINGS.model_copy(update={"pass_k": [1, 2], "pass_k_samples": 2}))
    try:
        result = domain.evaluate(tiny_policy, "selection", limit=3)
    finally:
        domain.close()
    assert isinstance(result, CodeEvalResult) and result.domain == "code" and result.split == "selection"
    assert result.score.n == 3 and result.score.low <= result.score.mean <= result.score.high
    assert len(result.results) == 3
    assert all(r.detail == NO_CODE or "tests passed" in r.detail for r in result.results)
    assert set(result.pass_at_k) == {"pass@1", "pass@2"}
    assert result.pass_at_k["pass@1"].mean <= result.pass_at_k["pass@2"].mean


def test_pass_at_k_larger_than_the_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="pass_k_samples"):
        CodeDomain(CodeSettings(pass_k=[5], pass_k_samples=2))


def test_splits_are_disjoint_deterministic_and_sealed(code_domain: CodeDomain, tmp_path: Path) -> None:
    ids = {s: [t.id for t in code_domain.tasks(s)] for s in ("train", "selection", "test")}  # type: ignore[misc]
    assert not set(ids["train"]) & set(ids["selection"]) and not set(ids["train"]) & set(ids["test"])
    assert not set(ids["selection"]) & set(ids["test"])
    again = CodeDomain(SETTINGS)
    try:
        assert [t.id for t in again.tasks("test")] == ids["test"]
    finally:
        again.close()
    written = write_train_tasks(code_domain, tmp_path / "inputs").read_text()
    for problem in code_domain.problems("selection") + code_domain.problems("test"):
        assert f'"id":"{problem.id}"' not in written
    for problem in code_domain.problems("train"):
        for hidden in problem.hidden:
            assert (hidden.code or "check(candidate)") not in written, "hidden tests never reach the harness"
