"""The scripted-training harness the loop tests run on (tests/scripted_harness) is what they take it for: a
harness template that differs from the shipped one only in `harness/train.py`, chosen through
META_AGENT_HARNESS_TEMPLATE, whose training writes what the contract asks of a real one (validated by the real
runner, in the real sandbox) and honours the steps, seed and settings it is given."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
import yaml

from meta_agent.backtest.compute import optimizer_steps
from meta_agent.domains.math import MathDomain
from meta_agent.gitops import init_harness
from meta_agent.paths import TEMPLATE_ENV, harness_template
from meta_agent.training import train_commit, write_train_tasks
from sandboxes import Limits, Sandbox
from tests.conftest import TEST_ROOT, commit_all
from tests.scripted_harness.template import scripted_template


def test_the_scripted_template_differs_from_the_shipped_one_in_its_training_alone() -> None:
    shipped, scripted = harness_template(), scripted_template(TEST_ROOT)

    def differing(cmp: filecmp.dircmp[str], prefix: str = "") -> list[str]:
        found = [prefix + n for n in cmp.diff_files + cmp.left_only + cmp.right_only if n != "__pycache__"]
        for name, sub in cmp.subdirs.items():
            if name != "__pycache__":
                found += differing(sub, f"{prefix}{name}/")
        return found

    assert differing(filecmp.dircmp(shipped, scripted)) == ["harness/train.py"]


def test_a_run_picks_its_template_from_the_environment_and_refuses_one_that_is_not_a_harness(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, str(scripted_template(TEST_ROOT)))
    repo = init_harness(tmp_path / "h", "math")
    assert "scripted policy" in (Path(repo.working_dir) / "harness" / "train.py").read_text()
    (tmp_path / "plain").mkdir()
    monkeypatch.setenv(TEMPLATE_ENV, str(tmp_path / "plain"))
    with pytest.raises(FileNotFoundError, match="is not a harness template"):
        init_harness(tmp_path / "h2", "math")


@pytest.mark.slow  # three sandboxed trainings
def test_scripted_training_writes_what_the_contract_asks_at_the_settings_it_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_policy: Path, sandbox: Sandbox,
        small_math: MathDomain) -> None:
    group = 8  # one group of 8 a step, not the template's two of 4
    monkeypatch.setenv(TEMPLATE_ENV, str(scripted_template(TEST_ROOT)))
    repo = init_harness(tmp_path / "harness", "math")
    path = Path(repo.working_dir) / "harness.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["rl"].update(num_generations=group, prompts_per_step=8 // group)
    path.write_text(yaml.safe_dump(cfg))
    commit = commit_all(repo, f"groups of {group}")
    tasks = write_train_tasks(small_math, tmp_path / "inputs")

    def train(seed: int, out: str) -> list[str]:
        run = train_commit(repo=repo, commit=commit, domain=small_math, sandbox=sandbox, limits=Limits(),
                           policy=tiny_policy, root_policy=tiny_policy, steps=3, seed=seed,
                           work_dir=tmp_path / f"work-{out}", out_dir=tmp_path / out, tasks_file=tasks)
        assert len(run.rollouts) == 3 * 8 and {r.step for r in run.rollouts} == {1, 2, 3}
        assert all(len({r.group_id for r in run.rollouts if r.step == s}) == 8 // group for s in (1, 2, 3))
        assert [m.step for m in run.output.metrics] == [1, 2, 3]
        assert optimizer_steps(run.checkpoint) == 3, "the step counter the train stage reads"
        assert all(r.verified is not None for r in run.rollouts), "labelled by the sealed verifier"
        assert max(r.completion_tokens for r in run.rollouts) <= cfg["rl"]["max_completion_length"]
        return [r.completion for r in run.rollouts]

    first, again, other = train(0, "a"), train(0, "b"), train(1, "c")
    assert first == again, "the same seed is the same run"
    assert first != other, "another seed is another run"
