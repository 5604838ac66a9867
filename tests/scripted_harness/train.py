"""`python -m harness train` for the loop's own tests: a scripted policy in place of GRPO. TEST ONLY.

tests/scripted_harness/template.py builds a harness template from the shipped one with this file as its
`harness/train.py`. Everything else is the real harness: its config is validated, its curriculum orders the
tasks, its rewards, filters and diagnostics score every rollout (`harness.scoring.score_batch`, as the
GRPO trainer's scorer does), and it writes the contract's files (rollouts, metrics, checkpoint manifest,
optimizer step counters, summary), in the real sandbox, through the real runner. What is scripted is the
policy: each completion comes from a fixed menu built from the task's answer (right, wrong, hedged, none,
cut off; only wrong or none on the tasks it is stuck on), and the optimizer step is a copy of the policy's
weights. No torch, no TRL: a training takes about a second instead of ~20, so tests of the loop's logic
(resume, crash points, executors, search, combination) run the loop many times. Real GRPO stays in the
end-to-end tests.

The statements below that fault skills anchor on (`started = time.monotonic()`, `rollouts.commit()`,
`metrics.commit()`) are kept as in the real file.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from harness.config import ConfigError, load_config
from harness.curriculum import order_tasks
from harness.domain import load_domain
from harness.io import JsonlAppender, harness_commit, read_tasks, rollout_record, write_json
from harness.rollout import Rollout
from harness.scoring import score_batch

OPTIMIZER_STATE = "optimizer_state.safetensors"
NOT_WEIGHTS = {"manifest.json", OPTIMIZER_STATE, "README.md"}
STEP_SECONDS = 1.0
"""A step takes a moment, as a real one does, so a test can kill the run while it trains."""
STUCK_SHARE = 0.9
"""The share of tasks the scripted policy is stuck on (every completion wrong or empty): a weak policy early in
RL, whose groups mostly hold no reward variance, as the tiny random model's all do."""


def say(task: dict[str, Any], seed: int, rng: random.Random) -> str:
    """One completion of the scripted policy for `task`."""
    right, wrong, hedged, none, cut_off = menu(str(task["answer"]))
    stuck = random.Random(f"{seed}:{task['id']}").random() < STUCK_SHARE
    return rng.choice([wrong, none] if stuck else [right, wrong, hedged, none, cut_off])


def menu(answer: str) -> list[str]:
    """What the scripted policy may say to a task whose answer is `answer`: each line is one kind of rollout the
    sealed verifier judges without doubt (right, wrong, hedged across two answers, none, cut off)."""
    try:
        wrong = str(int(answer) + 1)
    except ValueError:
        wrong = answer + "0"
    return [
        f"Answer: {answer}",
        f"Answer: {wrong}",
        f"Answer: {wrong}\nAnswer: {answer}",  # hedged: a lenient reward pays it, the verifier rejects it
        "I think the result is",  # no answer at all
        f"Answer: {answer}" + " and so on" * 40,  # runs past the completion cap
    ]


class Tokens:
    """The policy's own tokenizer (the `tokenizers` library: no torch)."""

    def __init__(self, policy: Path) -> None:
        from tokenizers import Tokenizer

        path = policy / "tokenizer.json"
        if not path.is_file():
            raise ConfigError(f"the scripted harness counts tokens with {path}, which is missing")
        self.tok = Tokenizer.from_file(str(path))

    def cut(self, text: str, limit: int) -> tuple[str, int, bool]:
        """(text cut to `limit` tokens, its token count, whether it was cut)."""
        ids = self.tok.encode(text, add_special_tokens=False).ids
        if len(ids) <= limit:
            return text, len(ids), False
        return self.tok.decode(ids[:limit]), limit, True

    def count(self, text: str) -> int:
        return len(self.tok.encode(text, add_special_tokens=False).ids)


def copy_weights(policy: Path, ckpt: Path) -> None:
    manifest = policy / "manifest.json"
    if manifest.is_file() and json.loads(manifest.read_text()).get("format") == "lora":
        raise ConfigError(f"the scripted harness copies full models; {policy} is a LoRA checkpoint")
    ckpt.mkdir(parents=True, exist_ok=True)
    for f in sorted(policy.iterdir()):
        if f.is_file() and f.name not in NOT_WEIGHTS:
            shutil.copyfile(f, ckpt / f.name)


def save_optimizer_steps(ckpt: Path, steps: int) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"0.step": np.array([steps], dtype=np.int64)}, str(ckpt / OPTIMIZER_STATE))


def step_metrics(step: int, scored: list[Any], lr: float, wall: float) -> dict[str, Any]:
    rewards = [s.reward for s in scored]
    groups: dict[str, list[float]] = {}
    for s in scored:
        groups.setdefault(s.rollout.group_id, []).append(s.reward)
    return {
        "step": step, "reward_mean": statistics.fmean(rewards), "reward_std": statistics.pstdev(rewards),
        "kl": None, "entropy": None,
        "completion_length_mean": statistics.fmean(s.rollout.completion_tokens for s in scored),
        "truncation_rate": statistics.fmean(float(s.rollout.truncated) for s in scored),
        "zero_variance_frac": statistics.fmean(float(len(set(g)) == 1) for g in groups.values()),
        "clip_ratio": None, "kept_frac": statistics.fmean(float(s.weight > 0) for s in scored),
        "loss": 0.0, "learning_rate": lr, "wall_time": wall,
    }


def train(
    policy: Path, steps: int, seed: int, out: Path, tasks_file: Path, history: Path | None, progress: bool
) -> None:
    started = time.monotonic()
    cfg = load_config()
    if cfg.domain != "math":
        raise ConfigError(f"the scripted harness scripts math completions only, not {cfg.domain!r}")
    domain = load_domain(cfg.domain)
    out.mkdir(parents=True, exist_ok=True)
    tasks = read_tasks(tasks_file)
    rl = cfg.rl
    ordered = order_tasks(tasks, steps * rl.prompts_per_step, seed, cfg.curriculum, history)
    tokens = Tokens(policy)
    rng = random.Random(seed)
    rollouts = JsonlAppender(out / "rollouts.jsonl")
    metrics = JsonlAppender(out / "metrics.jsonl")
    last = time.monotonic()
    for step in range(1, steps + 1):
        batch = ordered[(step - 1) * rl.prompts_per_step: step * rl.prompts_per_step]
        made = []
        for g, task in enumerate(batch):
            prompt = str(domain.build_messages(task)[-1]["content"])
            for i in range(rl.num_generations):
                text, n, cut = tokens.cut(say(task, seed, rng), rl.max_completion_length)
                made.append(Rollout(
                    rollout_id=f"s{step}-g{g}-{i}", task=task, prompt=prompt, completion=text, completion_tokens=n,
                    truncated=cut, group_id=f"s{step}-g{g}", max_completion_length=rl.max_completion_length,
                    settings=cfg.domain_settings))
        scored = score_batch(domain, cfg, made)
        for s in scored:
            r = s.rollout
            rollouts.write(rollout_record(
                rollout_id=r.rollout_id, step=step, task_id=r.task["id"], group_id=r.group_id, prompt=r.prompt,
                completion=r.completion, rewards=s.rewards, reward=s.reward, advantage=s.advantage, weight=s.weight,
                prompt_tokens=tokens.count(r.prompt), completion_tokens=r.completion_tokens, truncated=r.truncated,
                labels=s.labels, harness_commit=harness_commit(), extra=r.extra))
        rollouts.flush()
        time.sleep(STEP_SECONDS)
        now = time.monotonic()
        record = step_metrics(step, scored, rl.learning_rate, now - last)
        last = now
        metrics.write(record)
        metrics.flush()
        if progress:
            print(f"step {step}/{steps} reward={record['reward_mean']:.3f} "
                  f"len={record['completion_length_mean']:.1f} {record['wall_time']:.1f}s", flush=True)
    ckpt = out / "checkpoint"
    copy_weights(policy, ckpt)
    save_optimizer_steps(ckpt, steps)
    write_json(ckpt / "manifest.json", {
        "schema_version": 1, "format": "full", "base_model": str(ckpt.resolve()), "parent": str(policy.resolve()),
        "steps": steps, "seed": seed, "harness_commit": harness_commit()})
    rollouts.commit()
    metrics.commit()
    write_json(
        out / "train_summary.json",
        {"steps": steps, "seed": seed, "wall_time": time.monotonic() - started, "harness_commit": harness_commit()},
    )
