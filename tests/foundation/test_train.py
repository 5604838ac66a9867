"""`harness train` runs real GRPO steps in the sandbox and writes contract-valid files."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
from safetensors.torch import load_file

from meta_agent.contract import CheckpointManifest, RolloutRecord, read_json, read_jsonl
from meta_agent.domains.math import MathDomain
from meta_agent.training import TrainedRun, train_commit
from sandboxes import Limits, Sandbox
from tests.conftest import commit_all
from tests.foundation.conftest import STEPS, add_brevity_reward

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def test_train_writes_one_record_per_completion_and_one_metric_per_step(
    trained: tuple[git.Repo, TrainedRun, Path],
) -> None:
    repo, run, _ = trained
    out = run.output
    rl = {"num_generations": 4, "prompts_per_step": 2}
    assert len(out.metrics) == STEPS
    assert [m.step for m in out.metrics] == [1, 2]
    assert len(out.rollouts) == STEPS * rl["num_generations"] * rl["prompts_per_step"]
    groups = {r.group_id for r in out.rollouts}
    assert len(groups) == STEPS * rl["prompts_per_step"]
    assert {r.harness_commit for r in out.rollouts} == {repo.head.commit.hexsha}
    assert all(r.completion_tokens > 0 and r.prompt_tokens > 0 for r in out.rollouts)
    assert all(m.wall_time > 0 and m.entropy is not None for m in out.metrics)
    # The sealed verifier's verdict is filled in by meta-agent, never by the harness.
    assert all(r.verified is None for r in out.rollouts)
    assert all(r.verified is not None for r in run.rollouts)


def test_checkpoint_is_a_small_lora_adapter_on_the_given_base(
    trained: tuple[git.Repo, TrainedRun, Path], tiny_policy: Path
) -> None:
    _, run, _ = trained
    manifest = read_json(run.checkpoint / "manifest.json", CheckpointManifest)
    assert manifest.format == "lora"
    assert Path(manifest.base_model) == tiny_policy.resolve()
    assert (run.checkpoint / "adapter_model.safetensors").stat().st_size < 5_000_000


def test_training_with_reward_variance_moves_the_weights(
    math_harness: git.Repo, tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain, tmp_path: Path
) -> None:
    """With a reward that differs inside groups, GRPO has a gradient and the LoRA weights change."""
    add_brevity_reward(Path(math_harness.working_dir))
    commit = commit_all(math_harness, "add a brevity reward")
    from meta_agent.training import write_train_tasks

    tasks = write_train_tasks(small_math, tmp_path / "inputs")
    run = train_commit(
        repo=math_harness, commit=commit, domain=small_math, sandbox=sandbox, limits=Limits(),
        policy=tiny_policy, root_policy=tiny_policy, steps=2, seed=1, work_dir=tmp_path / "work",
        out_dir=tmp_path / "train", tasks_file=tasks,
    )
    assert any(abs(r.advantage) > 0 for r in run.rollouts)
    weights = load_file(str(run.checkpoint / "adapter_model.safetensors"))
    lora_b = [t for name, t in weights.items() if "lora_B" in name]
    assert lora_b and any(float(t.abs().sum()) > 0 for t in lora_b), "LoRA B starts at zero; training must move it"


@pytest.mark.parametrize("bad", ["rl:\n  loss_type: magic\n", "rl:\n  num_generations: 1\n"])
def test_invalid_harness_yaml_fails_with_the_field_named(
    math_harness: git.Repo, tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain, tmp_path: Path, bad: str
) -> None:
    from meta_agent.harness_runner import HarnessError
    from meta_agent.training import write_train_tasks

    (Path(math_harness.working_dir) / "harness.yaml").write_text("domain: math\n" + bad)
    commit = commit_all(math_harness, "bad settings")
    tasks = write_train_tasks(small_math, tmp_path / "inputs")
    with pytest.raises(HarnessError) as err:
        train_commit(
            repo=math_harness, commit=commit, domain=small_math, sandbox=sandbox, limits=Limits(),
            policy=tiny_policy, root_policy=tiny_policy, steps=1, seed=0, work_dir=tmp_path / "work",
            out_dir=tmp_path / "train", tasks_file=tasks,
        )
    field = bad.split("\n")[1].strip().split(":")[0]
    assert f"rl.{field}" in err.value.reason
    assert not (tmp_path / "train" / "rollouts.jsonl").exists()


def test_rollouts_are_reread_through_the_contract(trained: tuple[git.Repo, TrainedRun, Path]) -> None:
    _, run, _ = trained
    again = read_jsonl(run.output.out_dir / "rollouts.jsonl", RolloutRecord)
    assert [r.rollout_id for r in again] == [r.rollout_id for r in run.output.rollouts]
