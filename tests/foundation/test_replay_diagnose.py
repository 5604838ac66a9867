"""`replay` re-scores stored rollouts without a model; `diagnose` labels each failure mode."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from meta_agent.contract import RolloutRecord, Task, write_jsonl
from meta_agent.gitops import export_tree
from meta_agent.harness_runner import HarnessRunner
from meta_agent.training import VERIFIED, TrainedRun
from sandboxes import Sandbox
from tests.conftest import commit_all


def _runner(sandbox: Sandbox, repo: git.Repo, commit: str, tmp: Path, *readable: Path) -> HarnessRunner:
    work = export_tree(repo, commit, tmp / f"work-{commit[:8]}")
    return HarnessRunner(sandbox, work, commit=commit, readable=list(readable), writable=[tmp / "out"])


@pytest.mark.slow  # needs a trained run
def test_replay_of_an_unchanged_harness_reproduces_the_stored_rewards(
    trained: tuple[git.Repo, TrainedRun, Path], sandbox: Sandbox, tmp_path: Path
) -> None:
    repo, run, tasks = trained
    source = run.output.out_dir / VERIFIED
    with _runner(sandbox, repo, repo.head.commit.hexsha, tmp_path, tasks.parent, source.parent) as h:
        replayed = h.replay(rollouts=source, tasks=tasks, out=tmp_path / "out" / "replay.jsonl")
    stored = {r.rollout_id: r for r in run.output.rollouts}
    for r in replayed:
        assert r.rewards == stored[r.rollout_id].rewards
        assert r.reward == stored[r.rollout_id].reward
        assert r.advantage == pytest.approx(stored[r.rollout_id].advantage, abs=1e-4)


@pytest.mark.slow  # needs a trained run
def test_replay_with_a_changed_reward_flips_the_rewards(
    trained: tuple[git.Repo, TrainedRun, Path], sandbox: Sandbox, tmp_path: Path
) -> None:
    repo, run, tasks = trained
    clone = git.Repo.clone_from(repo.working_dir, tmp_path / "clone")
    cfg = Path(clone.working_dir) / "harness.yaml"
    cfg.write_text(cfg.read_text().replace("  correctness: 1.0", "  correctness: -1.0"))
    rewards = Path(clone.working_dir) / "harness" / "math" / "rewards.py"
    rewards.write_text(rewards.read_text().replace("return 1.0 if same_number", "return 0.5 if not same_number"))
    commit = commit_all(clone, "invert correctness")
    with _runner(sandbox, clone, commit, tmp_path, tasks.parent, run.output.out_dir) as h:
        replayed = h.replay(rollouts=run.output.out_dir / VERIFIED, tasks=tasks,
                            out=tmp_path / "out" / "replay.jsonl")
    # Every (wrong) rollout the tiny model wrote now scores -0.5 instead of 0.
    assert {r.reward for r in replayed} == {-0.5}


TASK = Task(id="t1", prompt="State the final answer: 3 + 4 =", answer="7", difficulty=1)


def _record(rid: str, group: str, completion: str, *, reward: float, verified: bool, truncated: bool = False
            ) -> RolloutRecord:
    return RolloutRecord(
        rollout_id=rid, step=1, task_id="t1", group_id=group, prompt=TASK.prompt, completion=completion,
        rewards={"correctness": reward}, reward=reward, advantage=0.0, prompt_tokens=10,
        completion_tokens=len(completion.split()), truncated=truncated, labels=[], harness_commit="x",
        verified=verified,
    )


HAND_BUILT = {
    # rollout id -> (group, completion, stored reward, sealed verdict, truncated, label it must get)
    "format": ("g1", "The sum is 7 I think", 1.0, True, False, "format_violation"),
    "noanswer": ("g1", "I really cannot tell", 0.0, False, False, "answer_not_extractable"),
    "trunc": ("g2", "Let me think step by step about three and", 0.0, False, True, "truncated"),
    "loop": ("g2", "add add add add add add add add add add add add add add add add", 0.0, False, False,
             "repetition"),
    "disagree": ("g3", "3 + 4 = 7\nAnswer: 7", 1.0, False, False, "reward_verifier_disagreement"),
    "zv1": ("g4", "Answer: 9", 0.0, False, False, "zero_variance_group"),
    "zv2": ("g4", "Answer: 8", 0.0, False, False, "zero_variance_group"),
    "clean": ("g1", "3 plus 4 makes 7.\nAnswer: 7", 1.0, True, False, None),
}


def test_diagnose_flags_each_failure_mode_and_leaves_clean_rollouts_alone(
    math_harness: git.Repo, sandbox: Sandbox, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    write_jsonl(data / "tasks.jsonl", [TASK])
    records = [
        _record(rid, g, c, reward=rw, verified=v, truncated=t) for rid, (g, c, rw, v, t, _) in HAND_BUILT.items()
    ]
    write_jsonl(data / "rollouts.jsonl", records)
    with _runner(sandbox, math_harness, math_harness.head.commit.hexsha, tmp_path, data) as h:
        diag = {d.rollout_id: d.labels for d in h.diagnose(rollouts=data / "rollouts.jsonl",
                                                            tasks=data / "tasks.jsonl",
                                                            out=tmp_path / "out" / "diag.jsonl")}
    for rid, (*_, expected) in HAND_BUILT.items():
        if expected is None:
            assert diag[rid] == [], f"clean rollout {rid} got labels {diag[rid]}"
        else:
            assert expected in diag[rid], f"{rid}: expected {expected}, got {diag[rid]}"
