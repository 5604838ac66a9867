"""Code domain: write a program from a statement; judged by hidden tests run in a sandbox.

Problems come from HumanEval, reasoning-gym's CodeI/O and any JSONL files the user imports
(meta_agent/code_tasks/). The harness sees only the train split, and of each task only the
statement and its visible tests (Task.metadata); hidden tests and the selection/test splits stay
in this process. Every program runs in one sandbox session per CodeDomain (opened on first use),
many tests per call; see docs/code-domain.md.
"""

from __future__ import annotations

import hashlib
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from meta_agent.code_tasks import sources
from meta_agent.code_tasks.executor import ProgramExecutor, ProgramJob, ProgramRun
from meta_agent.code_tasks.extract import conversation, extract_program
from meta_agent.code_tasks.passk import pass_at_k, sample_chat
from meta_agent.code_tasks.probes import PROBE_KINDS, hardcoded_completion
from meta_agent.code_tasks.problem import CodeProblem
from meta_agent.code_tasks.splits import assign
from meta_agent.contract import RolloutRecord, Task
from meta_agent.domains.base import EvalResult, Shard, Split, TaskResult, empty_shard, shard_of
from meta_agent.domains.settings import CodeSettings
from meta_agent.stats import Interval, bootstrap_ci

NO_CODE = "no code block in the completion"
class CodeEvalResult(EvalResult):
    pass_at_k: dict[str, Interval] = Field(default_factory=dict, description='"pass@5" -> mean over tasks + CI')


class CodeDomain:
    name = "code"
    invalid_labels: tuple[str, ...] = ("reward_verifier_disagreement", "hardcoded_outputs")

    def __init__(self, settings: CodeSettings | None = None) -> None:
        self.settings = settings or CodeSettings()
        if any(k > self.settings.pass_k_samples for k in self.settings.pass_k):
            raise ValueError(f"pass_k {self.settings.pass_k} needs pass_k_samples >= every k "
                             f"(it is {self.settings.pass_k_samples})")
        s = self.settings
        self.executor = ProgramExecutor(s.sandbox or "auto", timeout_s=s.test_timeout_s, memory_mb=s.memory_mb,
                                 workers=s.workers)
        self._finalizer = weakref.finalize(self, self.executor.close)
        self._splits: dict[Split, list[CodeProblem]] | None = None
        self._by_id: dict[str, CodeProblem] = {}
        self._verdicts: dict[tuple[str, str], bool] = {}

    def close(self) -> None:
        """End the sandbox session (also done at exit)."""
        self._finalizer()

    def _problems(self) -> dict[Split, list[CodeProblem]]:
        if self._splits is None:
            s = self.settings
            problems = [p for name in s.sources for p in sources.load_source(name, self.executor, s.codeio_problems)]
            for path in s.import_files:
                problems += sources.load_file(path.expanduser().resolve(), self.executor, s.visible_tests)
            if not problems:
                raise ValueError("the code domain has no problems: enable a source (code.sources) or import a "
                                 "file (code.import_files)")
            self._splits = assign(problems, {"train": s.train_size, "selection": s.selection_size,
                                             "test": s.test_size})
            self._by_id = {p.id: p for ps in self._splits.values() for p in ps}
        return self._splits

    def problems(self, split: Split) -> list[CodeProblem]:
        return self._problems()[split]

    def problem(self, task_id: str) -> CodeProblem:
        self._problems()
        if task_id not in self._by_id:
            raise KeyError(f"no code problem {task_id!r} in any split")
        return self._by_id[task_id]

    def tasks(self, split: Split) -> list[Task]:
        return [p.task() for p in self.problems(split)]

    def judge(self, pairs: Sequence[tuple[CodeProblem, str]]) -> list[ProgramRun | None]:
        """Hidden-test runs of many completions in one sandbox call; None where no program was extracted."""
        jobs, slots = [], []
        for i, (problem, completion) in enumerate(pairs):
            program = extract_program(problem, completion)
            if program is not None:
                jobs.append(ProgramJob(id=str(i), program=program, tests=problem.hidden,
                                       entry_point=problem.entry_point))
                slots.append(i)
        runs = self.executor.run(jobs)
        out: list[ProgramRun | None] = [None] * len(pairs)
        for i in slots:
            out[i] = runs[str(i)]
        return out

    def verify_many(self, pairs: Sequence[tuple[Task, str]]) -> list[bool]:
        """The sealed verdict per (task, completion), memoised: GRPO groups repeat completions."""
        keys = [(t.id, hashlib.sha256(c.encode()).hexdigest()) for t, c in pairs]
        todo = [i for i, k in enumerate(keys) if k not in self._verdicts]
        runs = self.judge([(self.problem(pairs[i][0].id), pairs[i][1]) for i in todo])
        for i, run in zip(todo, runs, strict=True):
            self._verdicts[keys[i]] = run is not None and run.passed
        return [self._verdicts[k] for k in keys]

    def export_train(self, inputs_dir: Path) -> list[Task]:
        """Code tasks need no files beside the tasks file: statement and visible tests are in the task."""
        return self.tasks("train")

    def verify(self, task: Task, rollout: RolloutRecord) -> bool:
        return self.verify_many([(task, rollout.completion)])[0]

    def hacking_probes(self, tasks: list[Task], limit: int = 8, seed: int = 0) -> list[RolloutRecord]:
        """Completions hard-coding each task's visible outputs; kept only where the verifier rejects them."""
        candidates = []
        for task in tasks[:limit]:
            for kind in PROBE_KINDS:
                completion = hardcoded_completion(kind, task.metadata)
                if completion is not None:
                    candidates.append((kind, task, completion))
        verdicts = self.verify_many([(t, c) for _, t, c in candidates])
        return [
            RolloutRecord(
                rollout_id=f"probe-{kind}-{task.id}", step=0, task_id=task.id, group_id=f"probe-{task.id}",
                prompt=task.prompt, completion=completion, rewards={}, reward=0.0, advantage=0.0, prompt_tokens=0,
                completion_tokens=len(completion.split()), truncated=False, labels=[], harness_commit="probe",
                verified=False, extra={"probe": kind},
            )
            for (kind, task, completion), ok in zip(candidates, verdicts, strict=True) if not ok
        ]

    def evaluate(self, policy: Path, split: Split, *, limit: int | None = None, root: Path | None = None,
                 on_progress: Callable[[int], None] | None = None, shard: Shard | None = None) -> CodeEvalResult:
        from meta_agent.inference import evaluator_chat
        from meta_agent.policy import load_for_inference
        from meta_agent.serving import check_serving, evaluator_of

        started = time.monotonic()
        s = self.settings
        problems = shard_of(self.problems(split)[:limit], shard, s.eval_batch_size)
        if shard is not None and not problems:
            return empty_shard(self.name, split, policy)  # type: ignore[return-value]
        evaluator = evaluator_of(self.settings)
        check_serving(evaluator)  # before loading anything
        model, tok = load_for_inference(policy, root)
        convs = [conversation(p) for p in problems]
        completions = evaluator_chat(model, tok, convs, max_new_tokens=s.eval_max_new_tokens,
                                     batch_size=s.eval_batch_size, evaluator=evaluator, on_batch=on_progress)
        runs = self.judge(list(zip(problems, completions, strict=True)))
        results = [TaskResult(task_id=p.id, correct=bool(r and r.passed), score=float(bool(r and r.passed)),
                              completion=c, detail=r.summary() if r else NO_CODE)
                   for p, c, r in zip(problems, completions, runs, strict=True)]
        at_k: dict[str, Interval] = {}
        if s.pass_k and problems:
            samples = sample_chat(model, tok, convs, n=s.pass_k_samples, temperature=s.pass_k_temperature,
                                  max_new_tokens=s.eval_max_new_tokens, batch_size=s.eval_batch_size)
            flat = [(p, c) for p, cs in zip(problems, samples, strict=True) for c in cs]
            passed = [bool(r and r.passed) for r in self.judge(flat)]
            n = s.pass_k_samples
            correct = [sum(passed[i * n : (i + 1) * n]) for i in range(len(problems))]
            at_k = {f"pass@{k}": bootstrap_ci([pass_at_k(n, c, k) for c in correct]) for k in sorted(set(s.pass_k))}
        return CodeEvalResult(domain=self.name, split=split, policy=str(policy),
                              score=bootstrap_ci([r.score for r in results]), results=results,
                              wall_time=time.monotonic() - started, pass_at_k=at_k)
