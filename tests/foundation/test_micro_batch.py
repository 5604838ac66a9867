"""`rl.micro_batch_size`: a step's completions go through forward and backward a few at a time (less memory,
for SWE episodes of thousands of tokens under a sandbox's memory cap), and the update stays the one the
whole batch makes."""

from __future__ import annotations

import sys
from pathlib import Path

import git
import pytest
from safetensors.torch import load_file

from meta_agent.domains.math import MathDomain
from meta_agent.training import train_commit, write_train_tasks
from sandboxes import Limits, Sandbox
from tests.conftest import commit_all
from tests.foundation.conftest import add_brevity_reward

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness_repo"))

pytestmark = pytest.mark.slow  # trains a model: not in `make test-fast`


@pytest.mark.parametrize(("generations", "prompts", "cap", "want"), [
    (4, 2, None, (8, 1)), (4, 2, 1, (1, 8)), (4, 2, 3, (2, 4)), (8, 1, 5, (4, 2)), (4, 1, 64, (4, 1)),
])
def test_the_step_is_split_into_equal_passes_no_larger_than_asked(
    generations: int, prompts: int, cap: int | None, want: tuple[int, int]
) -> None:
    from harness.config import HarnessConfig, RLSettings
    from harness.train import grpo_args

    rl = RLSettings(num_generations=generations, prompts_per_step=prompts, micro_batch_size=cap)
    assert rl.micro_batch() == want
    args = grpo_args(HarnessConfig(domain="math", rl=rl), steps=1, seed=0, output_dir="unused")
    # what TRL is handed: passes of `want[0]` completions, one optimizer step over the whole generated batch
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == want
    assert args.generation_batch_size == generations * prompts


@pytest.mark.parametrize(("batch", "cap", "want"), [(4, None, (4, 1)), (4, 1, (1, 4)), (4, 3, (2, 2)), (6, 4, (3, 2))])
def test_the_warm_starts_steps_are_split_the_same_way(batch: int, cap: int | None, want: tuple[int, int]) -> None:
    """Four SWE turn examples in one pass took SmolLM2's warm start to 15 GB, over the sandbox's 12 GB cap."""
    from harness.config import HarnessConfig, RLSettings, WarmStartSettings
    from harness.warm_start import sft_args

    cfg = HarnessConfig(domain="swe", rl=RLSettings(micro_batch_size=cap), warm_start=WarmStartSettings(
        steps=3, batch_size=batch))
    args = sft_args(cfg, seed=0, scratch="unused")
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == want
    assert args.max_steps == 3


@pytest.mark.parametrize(("steps", "passes", "examples", "want"),
                         [(96, 2.0, 48, 96), (96, 2.0, 28, 56), (96, None, 28, 96), (96, 2.0, 200, 96),
                          (96, 0.01, 3, 1), (96, 2.0, 0, 96)])
def test_the_warm_start_makes_at_most_its_passes_over_fewer_demonstrations(
        steps: int, passes: float | None, examples: int, want: int) -> None:
    """A skill sized for 48 demonstrations (96 steps: two passes) makes two passes over the 28 a smaller task
    set yields, not 3.4: the extra passes memorise and cost minutes."""
    from harness.config import HarnessConfig, WarmStartSettings
    from harness.warm_start import planned_steps, sft_args

    cfg = HarnessConfig(domain="swe", warm_start=WarmStartSettings(steps=steps, batch_size=1, passes=passes))
    assert planned_steps(cfg, examples) == want
    assert sft_args(cfg, seed=0, scratch="unused", examples=examples).max_steps == want


def test_micro_batches_make_the_update_the_whole_batch_makes(
    math_harness: git.Repo, tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain, tmp_path: Path
) -> None:
    root = Path(math_harness.working_dir)
    add_brevity_reward(root)
    whole = commit_all(math_harness, "a reward with variance")
    cfg = root / "harness.yaml"
    cfg.write_text(cfg.read_text().replace("rl:\n", "rl:\n  micro_batch_size: 1\n", 1))
    micro = commit_all(math_harness, "one completion per pass")
    tasks = write_train_tasks(small_math, tmp_path / "inputs")
    runs = {}
    for name, commit in (("whole", whole), ("micro", micro)):
        runs[name] = train_commit(
            repo=math_harness, commit=commit, domain=small_math, sandbox=sandbox, limits=Limits(),
            policy=tiny_policy, root_policy=tiny_policy, steps=1, seed=3, work_dir=tmp_path / f"work-{name}",
            out_dir=tmp_path / name, tasks_file=tasks)
    # one generation of the same completions, one optimizer step in both
    assert [r.completion for r in runs["micro"].rollouts] == [r.completion for r in runs["whole"].rollouts]
    assert len(runs["micro"].output.metrics) == len(runs["whole"].output.metrics) == 1
    a, b = (load_file(str(runs[n].checkpoint / "adapter_model.safetensors")) for n in ("whole", "micro"))
    assert a.keys() == b.keys()
    moved = [k for k in a if "lora_B" in k and float(a[k].abs().sum()) > 0]
    assert moved, "the whole batch's step must move the adapter for this comparison to mean anything"
    # Adam's first step moves each weight by about +-lr (2e-5) by its gradient's sign, so an entry whose
    # gradient is ~0 may flip on float rounding: a few in ten thousand do; a wrong split would flip half.
    entries = sum(t.numel() for t in a.values())
    same = sum(int(((a[k] - b[k]).abs() <= 1e-6).sum()) for k in a)
    assert same >= 0.995 * entries, f"{entries - same} of {entries} adapter weights differ between 1 pass and 8"
