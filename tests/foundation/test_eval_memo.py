"""A sealed evaluation is decoded once per set of weights: a training that changed nothing, or a byte-identical
checkpoint, gets the answers already decoded for those weights, and nothing else does."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import git
import pytest
import torch
from safetensors.torch import load_file, save_file

from meta_agent.domains.base import EvalResult
from meta_agent.domains.math import MathDomain
from meta_agent.eval_memo import MEMO_DIR, ROOT, evaluate_memoized, policy_digest, reuse_note, trim
from meta_agent.execution.jobs import JobEnv, RunJob
from sandboxes import Sandbox


def _adapter(tiny_policy: Path, out: Path, *, nudge: float = 0.0, **lora: object) -> Path:
    """A LoRA checkpoint on the tiny policy as `harness train` writes one; `nudge` != 0 moves its lora_B off
    zero (a training that learned), 0 leaves PEFT's zero start (a training whose every update was zero)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_policy), dtype=torch.float32)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], **lora)  # type: ignore[arg-type]
    peft = get_peft_model(model, config)
    if nudge:
        with torch.no_grad():
            for name, p in peft.named_parameters():
                if "lora_B" in name:
                    p.add_(nudge)
    peft.save_pretrained(str(out))
    (out / "manifest.json").write_text(json.dumps({
        "schema_version": 1, "format": "lora", "base_model": str(tiny_policy), "parent": str(tiny_policy),
        "steps": 2, "seed": 0, "harness_commit": "0" * 40}))
    (out / "optimizer_state.safetensors").write_bytes(b"state")
    return out


@pytest.fixture(scope="module")
def adapters(tmp_path_factory: pytest.TempPathFactory, tiny_policy: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapters")
    return {"unchanged": _adapter(tiny_policy, root / "unchanged"),
            "learned": _adapter(tiny_policy, root / "learned", nudge=0.05)}


def _answers(result: EvalResult) -> list[tuple[str, str]]:
    return [(r.task_id, r.completion) for r in result.results]


def test_an_adapter_that_changed_nothing_answers_as_the_root_does(
    adapters: dict[str, Path], tiny_policy: Path, small_math: MathDomain
) -> None:
    """The premise of the memo, checked by decoding both: zero lora_B merges to the root bit for bit."""
    assert policy_digest(adapters["unchanged"], tiny_policy) == ROOT
    root = small_math.evaluate(tiny_policy, "selection", limit=4)
    same = small_math.evaluate(adapters["unchanged"], "selection", limit=4, root=tiny_policy)
    assert _answers(same) == _answers(root)


def test_the_second_evaluation_of_the_same_weights_is_reused_and_other_weights_are_decoded(
    adapters: dict[str, Path], tiny_policy: Path, small_math: MathDomain, tmp_path: Path
) -> None:
    memo = tmp_path / MEMO_DIR
    seen: list[int] = []
    first = evaluate_memoized(small_math, tiny_policy, "selection", seen.append, memo_dir=memo, root=tiny_policy,
                              limit=4)
    assert first.reused_from is None and len(list(memo.glob("*.json"))) == 1
    again = evaluate_memoized(small_math, adapters["unchanged"], "selection", seen.append, memo_dir=memo,
                              root=tiny_policy, limit=4)
    assert again.reused_from == str(tiny_policy) and again.policy == str(adapters["unchanged"])
    assert _answers(again) == _answers(first) and again.score == first.score
    assert sum(seen) == 8, "progress counts the reused answers too"

    learned = evaluate_memoized(small_math, adapters["learned"], "selection", None, memo_dir=memo, root=tiny_policy,
                                limit=4)
    assert learned.reused_from is None
    assert _answers(learned) == _answers(small_math.evaluate(adapters["learned"], "selection", limit=4,
                                                             root=tiny_policy))
    other_split = evaluate_memoized(small_math, tiny_policy, "test", None, memo_dir=memo, root=tiny_policy, limit=4)
    assert other_split.reused_from is None
    fewer = evaluate_memoized(small_math, tiny_policy, "selection", None, memo_dir=memo, root=tiny_policy, limit=2)
    assert fewer.reused_from is None and len(fewer.results) == 2


def test_the_same_weights_evaluated_side_by_side_are_decoded_once(
    adapters: dict[str, Path], tiny_policy: Path, small_math: MathDomain, tmp_path: Path
) -> None:
    """Main and its noise rerun finish training together: the second waits for the first one's answers."""
    memo = tmp_path / MEMO_DIR
    with ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda p: evaluate_memoized(small_math, p, "selection", None, memo_dir=memo,
                                                         root=tiny_policy, limit=4),
                             [tiny_policy, adapters["unchanged"]]))
    assert sorted(r.reused_from is None for r in both) == [False, True]
    assert _answers(both[0]) == _answers(both[1])


def test_a_torn_memo_entry_is_decoded_again(tiny_policy: Path, small_math: MathDomain, tmp_path: Path) -> None:
    memo = tmp_path / MEMO_DIR
    evaluate_memoized(small_math, tiny_policy, "selection", None, memo_dir=memo, root=tiny_policy, limit=2)
    (entry,) = memo.glob("*.json")
    entry.write_text(entry.read_text()[:40])  # a kill mid-write of an older version, a full disk
    again = evaluate_memoized(small_math, tiny_policy, "selection", None, memo_dir=memo, root=tiny_policy, limit=2)
    assert again.reused_from is None and len(again.results) == 2


def test_only_identical_weights_share_a_digest(adapters: dict[str, Path], tiny_policy: Path, tmp_path: Path) -> None:
    learned = policy_digest(adapters["learned"], tiny_policy)
    assert learned not in (None, ROOT)
    copy = shutil.copytree(adapters["learned"], tmp_path / "copy")
    (copy / "README.md").write_text("another run's notes")
    (copy / "optimizer_state.safetensors").write_bytes(b"another optimizer state")
    assert policy_digest(copy, tiny_policy) == learned, "files the evaluator never reads do not count"

    weights = copy / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert policy_digest(copy, tiny_policy) not in (learned, ROOT)


def test_zero_lora_b_is_not_the_root_where_the_adapter_changes_more(tiny_policy: Path, tmp_path: Path) -> None:
    """DoRA rescales the weights even at a zero lora_B; an infinite weight or scale makes 0 x inf = NaN; an adapter
    trained on another base is not this root."""
    dora = _adapter(tiny_policy, tmp_path / "dora", use_dora=True)
    assert policy_digest(dora, tiny_policy) not in (None, ROOT)
    poisoned = _adapter(tiny_policy, tmp_path / "poisoned")
    tensors = load_file(str(poisoned / "adapter_model.safetensors"))
    first_a = next(k for k in tensors if ".lora_A." in k)
    tensors[first_a][0, 0] = float("inf")  # merged: 0 x inf is NaN, a broken policy, not the root
    save_file(tensors, str(poisoned / "adapter_model.safetensors"))
    assert policy_digest(poisoned, tiny_policy) not in (None, ROOT)
    huge = _adapter(tiny_policy, tmp_path / "huge")
    config = json.loads((huge / "adapter_config.json").read_text())
    (huge / "adapter_config.json").write_text(json.dumps({**config, "lora_alpha": 1e999}))
    assert policy_digest(huge, tiny_policy) not in (None, ROOT)
    elsewhere = _adapter(tiny_policy, tmp_path / "elsewhere")
    manifest = json.loads((elsewhere / "manifest.json").read_text())
    (elsewhere / "manifest.json").write_text(json.dumps({**manifest, "base_model": str(tmp_path)}))
    assert policy_digest(elsewhere, tiny_policy) not in (None, ROOT)


def test_a_checkpoint_with_a_link_is_never_keyed(adapters: dict[str, Path], tiny_policy: Path, tmp_path: Path) -> None:
    """A link could point at another policy's files: the loader refuses such a checkpoint, the memo never keys it."""
    linked = shutil.copytree(adapters["unchanged"], tmp_path / "linked")
    (linked / "adapter_model.safetensors").unlink()
    (linked / "adapter_model.safetensors").symlink_to(adapters["learned"] / "adapter_model.safetensors")
    assert policy_digest(linked, tiny_policy) is None
    hard = shutil.copytree(adapters["unchanged"], tmp_path / "hard")
    (hard / "extra.bin").hardlink_to(hard / "adapter_model.safetensors")
    assert policy_digest(hard, tiny_policy) is None


def test_a_run_job_reuses_the_run_s_memo(
    adapters: dict[str, Path], tiny_policy: Path, small_math: MathDomain, sandbox: Sandbox, tmp_path: Path
) -> None:
    """What evolve's jobs do: the memo sits in the run dir, and the eval file says whose answers it holds."""
    env = JobEnv(domain=small_math, sandbox=sandbox, repo=git.Repo.init(tmp_path / "repo"))

    def job(policy: Path, out: str) -> RunJob:
        return RunJob(key=out, label=out, config={"run_dir": str(tmp_path / "run")}, harness="",
                      root_policy=str(tiny_policy), tasks_file="", policy=str(policy), eval_split="selection",
                      eval_out=str(tmp_path / f"{out}.json"), eval_limit=3)

    job(tiny_policy, "control").execute(env)
    job(adapters["unchanged"], "candidate").execute(env)
    written = json.loads((tmp_path / "candidate.json").read_text())
    assert written["reused_from"] == str(tiny_policy) and written["policy"] == str(adapters["unchanged"])
    assert (tmp_path / "run" / MEMO_DIR).is_dir()
    reused = EvalResult.model_validate(written)
    assert reuse_note(reused, tmp_path / "run") == (
        f"; its trained weights equal {tiny_policy}'s, whose sealed answers were reused")
    control = EvalResult.model_validate_json((tmp_path / "control.json").read_text())
    assert control.reused_from is None and reuse_note(control, tmp_path / "run") == ""


def test_a_verdict_names_the_reused_checkpoint_by_its_run() -> None:
    """With the store shared by every run, the answers can be an earlier run's: the verdict names that run
    instead of an absolute path, and a checkpoint of its own run by its place in the run."""
    runs = Path("/home/u/project/runs")

    def note(source: Path) -> str:
        result = EvalResult.model_validate({"domain": "math", "split": "selection", "policy": "p", "results": [],
                                            "score": {"mean": 0, "low": 0, "high": 0, "n": 0}, "wall_time": 0,
                                            "reused_from": str(source)})
        return reuse_note(result, runs / "r2")

    assert note(runs / "r2/gen-000/main/checkpoint") == (
        "; its trained weights equal gen-000/main/checkpoint's, whose sealed answers were reused")
    assert note(runs / "r1/gen-001/main/checkpoint") == (
        "; its trained weights equal run r1/gen-001/main/checkpoint's, whose sealed answers were reused")
    assert note(Path("/models/base")) == "; its trained weights equal /models/base's, whose sealed answers were reused"


def test_the_memo_drops_the_least_recently_used_answers_past_its_cap(tmp_path: Path) -> None:
    """The shared store outlives every run: past its cap the answers used longest ago go, with their locks,
    while a key being decoded now (its lock held) is kept."""
    import fcntl
    import os

    memo = tmp_path / "memo"
    memo.mkdir()

    def answers(key: str, when: int) -> None:
        (memo / f"{key}.json").write_bytes(b"x" * (400 << 10))
        (memo / f"{key}.lock").touch()
        os.utime(memo / f"{key}.json", (when, when))

    for i, key in enumerate(("held", "old", "recent")):
        answers(key, 1000 + i)
    with (memo / "held.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        trim(memo, keep_mb=1)
    assert sorted(p.name for p in memo.iterdir()) == ["held.json", "held.lock", "recent.json", "recent.lock"]
    answers("newest", 2000)
    trim(memo, keep_mb=1)  # nobody holds it now
    assert sorted(p.name for p in memo.iterdir()) == ["newest.json", "newest.lock", "recent.json", "recent.lock"]
