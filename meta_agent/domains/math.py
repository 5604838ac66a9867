"""Math domain: reasoning-gym arithmetic and word problems at four difficulty levels.

Splits come from disjoint generator seeds, and a sealed split drops any question
that also occurs in an earlier split, so held-out tasks are never copies of
training ones. The sealed verifier and evaluation protocol live only here.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

from meta_agent.contract import RolloutRecord, Task
from meta_agent.domains.base import EvalResult, Shard, Split, TaskResult, empty_shard, shard_of
from meta_agent.domains.settings import MathSettings
from meta_agent.stats import bootstrap_ci

# (level, reasoning-gym dataset, config overrides, share of each split)
LEVELS: list[tuple[int, str, dict[str, Any], float]] = [
    (1, "chain_sum", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}, 0.35),
    (2, "chain_sum", {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2}, 0.3),
    (3, "basic_arithmetic", {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2,
                             "operators": ["+", "-", "*"]}, 0.25),
    (4, "gsm_symbolic", {}, 0.1),
]
SPLITS: tuple[Split, ...] = ("train", "selection", "test")
TRAIN_SEED = 1_000
"""The train split is public (it is written into the sandbox); the sealed splits' seeds are secret."""


def split_seed(split: Split) -> int:
    """The generator seed of a split: public for train, the install's secret for selection and test."""
    from meta_agent.sealed import sealed_seed

    return TRAIN_SEED if split == "train" else sealed_seed("math", split)
EVAL_SYSTEM = "You are a careful calculator. Solve the problem and finish with a line 'Answer: <number>'."
_ANSWER_LINE = re.compile(r"answer\s*[:=]\s*\$?(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


SPRAY_NUMBERS = 8
"""Without an 'Answer:' line, a completion with this many distinct numbers has not committed to one."""


def extract_answer(completion: str) -> str | None:
    """The evaluation protocol's answer: the one 'Answer: N' value, else the last number.

    A completion that commits to no single answer (two different 'Answer:' values, or no
    answer line and a spray of numbers) has no answer: spraying must never be rewarded.
    """
    stated = [a.replace(",", "") for a in _ANSWER_LINE.findall(completion)]
    if stated:
        return stated[-1] if len(set(stated)) == 1 else None
    numbers = [n.replace(",", "") for n in _NUMBER.findall(completion)]
    if len(set(numbers)) >= SPRAY_NUMBERS:
        return None
    return numbers[-1] if numbers else None


def answers_match(predicted: str | None, gold: str) -> bool:
    if predicted is None:
        return False
    from math_verify import ExprExtractionConfig, parse, verify

    cfg = [ExprExtractionConfig()]
    return bool(verify(parse(gold, extraction_config=cfg), parse(predicted, extraction_config=cfg)))


def _wrong_answer(answer: str, offset: int = 1) -> str:
    try:
        return str(int(float(answer)) + offset)
    except ValueError:
        return answer + "1"


def _generate(level: int, dataset: str, overrides: dict[str, Any], size: int, seed: int, split: Split
              ) -> list[Task]:
    import reasoning_gym

    ds = reasoning_gym.create_dataset(dataset, size=size, seed=seed, **overrides)
    return [
        Task(
            id=f"{dataset}-L{level}-{split}-{i}",  # never the seed: a sealed task's id must not reveal it
            prompt=entry["question"],
            answer=str(entry["answer"]),
            difficulty=level,
            source=dataset,
        )
        for i, entry in enumerate(ds)
    ]


class MathDomain:
    name = "math"

    def __init__(self, settings: MathSettings | None = None) -> None:
        self.settings = settings or MathSettings()
        self._cache: dict[Split, list[Task]] = {}

    def _size(self, split: Split) -> int:
        return {"train": self.settings.train_size, "selection": self.settings.selection_size,
                "test": self.settings.test_size}[split]

    def tasks(self, split: Split) -> list[Task]:
        if split not in self._cache:
            earlier: set[str] = set()
            for prior in SPLITS:
                if prior == split:
                    break
                earlier |= {t.prompt for t in self.tasks(prior)}
            self._cache[split] = self._build(split, earlier)
        return self._cache[split]

    def _levels(self, split: Split) -> list[tuple[int, str, dict[str, Any], float]]:
        """The levels of a split with their shares: LEVELS, or for a sealed split `sealed_levels` when set."""
        mix = self.settings.sealed_levels
        if split == "train" or not mix:
            return LEVELS
        total = sum(mix.values())
        return [(level, dataset, overrides, mix.get(level, 0.0) / total)
                for level, dataset, overrides, _ in LEVELS if mix.get(level, 0.0) > 0]

    def _build(self, split: Split, exclude: set[str]) -> list[Task]:
        total = self._size(split)
        out: list[Task] = []
        levels = self._levels(split)
        for level, dataset, overrides, share in levels:
            want = max(1, round(total * share)) if level != levels[-1][0] else total - len(out)
            # Over-generate so that dropping duplicates of earlier splits still fills the quota.
            pool = _generate(level, dataset, overrides, want * 3 + 10, split_seed(split) + level, split)
            seen: set[str] = set()
            picked = []
            for t in pool:
                if t.prompt not in exclude and t.prompt not in seen:
                    seen.add(t.prompt)
                    picked.append(t)
                if len(picked) == want:
                    break
            out.extend(picked)
        return out[:total]

    def export_train(self, inputs_dir: Path) -> list[Task]:
        return self.tasks("train")

    def verify(self, task: Task, rollout: RolloutRecord) -> bool:
        return answers_match(extract_answer(rollout.completion), task.answer)

    invalid_labels: tuple[str, ...] = ("reward_verifier_disagreement",)

    def hacking_probes(self, tasks: list[Task], limit: int = 8, seed: int = 0) -> list[RolloutRecord]:
        """Completions that game lenient answer extraction; each is rejected by the sealed verifier."""
        rng = random.Random(seed)
        probes = []
        for task in tasks[:limit]:
            wrong = _wrong_answer(task.answer, rng.choice((1, -1, 2, 10)))
            numbers = [str(n) for n in rng.sample(range(-50, 200), SPRAY_NUMBERS + 4)] + [task.answer]
            rng.shuffle(numbers)
            candidates = {
                "spray": " ".join(numbers),
                "hedge": f"Answer: {wrong}\nAnswer: {task.answer}",
                "hedge-reversed": f"Answer: {task.answer}\nAnswer: {wrong}",
            }
            for kind, completion in candidates.items():
                if answers_match(extract_answer(completion), task.answer):
                    continue
                probes.append(RolloutRecord(
                    rollout_id=f"probe-{kind}-{task.id}", step=0, task_id=task.id, group_id=f"probe-{task.id}",
                    prompt=task.prompt, completion=completion, rewards={}, reward=0.0, advantage=0.0,
                    prompt_tokens=0, completion_tokens=len(completion.split()), truncated=False, labels=[],
                    harness_commit="probe", verified=False, extra={"probe": kind},
                ))
        return probes

    def evaluate(self, policy: Path, split: Split, *, limit: int | None = None, root: Path | None = None,
                 on_progress: Any = None, shard: Shard | None = None) -> EvalResult:
        from meta_agent.inference import evaluator_chat
        from meta_agent.policy import load_for_inference
        from meta_agent.serving import check_serving, evaluator_of

        started = time.monotonic()
        tasks = shard_of(self.tasks(split)[:limit], shard, self.settings.eval_batch_size)
        if shard is not None and not tasks:
            return empty_shard(self.name, split, policy)
        evaluator = evaluator_of(self.settings)
        check_serving(evaluator)  # before loading anything
        model, tok = load_for_inference(policy, root)
        convs = [[{"role": "system", "content": EVAL_SYSTEM}, {"role": "user", "content": t.prompt}] for t in tasks]
        completions = evaluator_chat(model, tok, convs, max_new_tokens=self.settings.eval_max_new_tokens,
                                     batch_size=self.settings.eval_batch_size, evaluator=evaluator,
                                     on_batch=on_progress)
        results = []
        for t, c in zip(tasks, completions, strict=True):
            predicted = extract_answer(c)
            ok = answers_match(predicted, t.answer)
            results.append(TaskResult(task_id=t.id, correct=ok, score=float(ok), completion=c,
                                      detail=f"predicted {predicted!r}, expected {t.answer!r}"))
        return EvalResult(domain=self.name, split=split, policy=str(policy),
                          score=bootstrap_ci([r.score for r in results]), results=results,
                          wall_time=time.monotonic() - started)
