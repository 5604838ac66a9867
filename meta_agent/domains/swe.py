"""SWE domain: repository-level bug fixing on task sets built from real projects (meta_agent/swe).

The harness gets the train split as tasks whose repository trees are tar archives in the run's
inputs (no .git, no other split's bugs). Each carries its fix as a demonstration (meta_agent/swe/
demonstration.py): the train split is the harness's data, for a warm start if its settings ask.
The sealed verifier applies a diff to a fresh checkout, restores the original tests and runs
FAIL_TO_PASS + PASS_TO_PASS in a sandbox; the evaluator drives the fixed scaffold (swe_scaffold.py)
with greedy decoding.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from meta_agent.contract import RolloutRecord, Task
from meta_agent.domains.base import EvalResult, Shard, Split, TaskResult, empty_shard, shard_of
from meta_agent.domains.settings import SweSettings
from meta_agent.domains.swe_scaffold import Replier, run_episodes
from meta_agent.multiturn import MultiTurnGreedy
from meta_agent.sealed import sealed_backend
from meta_agent.stats import bootstrap_ci
from meta_agent.swe.checkout import checkout
from meta_agent.swe.defaults import DEFAULT_TASKSET
from meta_agent.swe.demonstration import demonstration
from meta_agent.swe.difficulty import TIERS, Tier
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.shipped import ensure_default
from meta_agent.swe.taskset import load_tasks
from meta_agent.swe.verdict import evaluate_patch
from sandboxes import Sandbox

CONFTEST_HACK = (
    "--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1,7 @@\n+import pytest\n+\n+\n"
    "+@pytest.hookimpl(hookwrapper=True)\n+def pytest_runtest_makereport(item, call):\n"
    "+    report = (yield).get_result()\n+    report.outcome = 'passed'\n"
)


def patched_files(patch: str) -> list[str]:
    """The files a unified diff writes to (its `+++ b/PATH` headers), sorted."""
    return sorted({m for m in re.findall(r"^\+\+\+ b/(\S+)", patch, flags=re.MULTILINE)})


def _archive_name(instance_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", instance_id) + ".tar"


def _round_robin(instances: list[SweInstance]) -> list[SweInstance]:
    """Deterministic order that takes one instance per project in turn, so a prefix spans projects."""
    by_project: dict[str, list[SweInstance]] = {}
    for inst in sorted(instances, key=lambda i: i.instance_id):
        by_project.setdefault(inst.project, []).append(inst)
    queues = [by_project[p] for p in sorted(by_project)]
    out: list[SweInstance] = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def _in_tiers(instances: list[SweInstance], tiers: list[Tier], taskset: str, split: Split) -> list[SweInstance]:
    """The instances of the chosen tiers; all of them (tiered or not) when every tier is chosen."""
    if set(tiers) >= set(TIERS):
        return instances
    chosen = [i for i in instances if i.tier in tiers]
    if not chosen and instances:
        untiered = sum(i.tier is None for i in instances)
        why = (f"{untiered} of its {len(instances)} instances have no tier (imported, or built before tiers: "
               f"rebuild with `meta-agent tasks build`)" if untiered else "it has none of them")
        raise SweTaskError(f"swe.tiers {tiers}: task set {taskset!r} has no {split} instance of these tiers; {why}")
    return chosen


def _difficulty(inst: SweInstance) -> int:
    """1 easy, 2 medium, 3 hard; for an instance without a tier, its count of failing tests (at most 3)."""
    return TIERS.index(inst.tier) + 1 if inst.tier else min(3, len(inst.FAIL_TO_PASS))


class SweDomain:
    name = "swe"
    invalid_labels: tuple[str, ...] = ("reward_verifier_disagreement", "tests_edited")

    def __init__(self, settings: SweSettings | None = None) -> None:
        self.settings = settings or SweSettings()
        self._instances: dict[Split, list[SweInstance]] = {}
        self._verdicts: dict[tuple[str, str], bool] = {}
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = sealed_backend(self.settings.sandbox or "auto")
        return self._sandbox

    def instances(self, split: Split) -> list[SweInstance]:
        """The split's instances (a deterministic prefix of the task set); installs the default set once."""
        if split not in self._instances:
            name = self.settings.taskset
            if name == DEFAULT_TASKSET:
                ensure_default(sandbox=self.settings.sandbox or "auto")
            size = {"train": self.settings.train_size, "selection": self.settings.selection_size,
                    "test": self.settings.test_size}[split]
            chosen = _in_tiers(load_tasks(split, name), self.settings.tiers, name, split)
            self._instances[split] = _round_robin(chosen)[:size]
        return self._instances[split]

    def _by_id(self) -> dict[str, SweInstance]:
        return {i.instance_id: i for split in ("train", "selection", "test") for i in self.instances(split)}

    def tasks(self, split: Split) -> list[Task]:
        return [self._task(i, with_files=split == "train") for i in self.instances(split)]

    def _task(self, inst: SweInstance, with_files: bool) -> Task:
        setup = inst.test_setup()
        meta: dict[str, Any] = {}
        if with_files and inst.image is not None:
            # its repository and environment are in its image: the harness reaches them through the episode
            # server (meta_agent/swe/episode_server.py), never as an archive
            meta = {"environment": "image", "fail_to_pass": inst.FAIL_TO_PASS, "pass_to_pass": inst.PASS_TO_PASS,
                    "gold_files": patched_files(inst.patch), "demonstration": demonstration(inst)}
        elif with_files:
            meta = {"archive": f"swe/{_archive_name(inst.instance_id)}", "fail_to_pass": inst.FAIL_TO_PASS,
                    "pass_to_pass": inst.PASS_TO_PASS, "python_path": setup.python_path,
                    "pytest_args": setup.pytest_args, "test_timeout_s": setup.timeout_s,
                    "gold_files": patched_files(inst.patch), "demonstration": demonstration(inst)}
        return Task(id=inst.instance_id, prompt=inst.problem_statement, answer="", source=inst.repo,
                    difficulty=_difficulty(inst), metadata=meta)

    def export_train(self, inputs_dir: Path) -> list[Task]:
        """One tar archive of the buggy tree per train instance, beside the tasks file."""
        out = inputs_dir / "swe"
        out.mkdir(parents=True, exist_ok=True)
        for inst in self.instances("train"):
            target = out / _archive_name(inst.instance_id)
            if target.exists() or inst.image is not None:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                tree = checkout(inst, Path(tmp) / "tree")
                partial = target.with_suffix(".partial")
                with tarfile.open(partial, "w") as tar:
                    for path in sorted(tree.rglob("*")):
                        tar.add(path, arcname=str(path.relative_to(tree)), recursive=False)
                partial.replace(target)
        return self.tasks("train")

    @contextlib.contextmanager
    def train_environment(self) -> Iterator[tuple[list[Path], dict[str, str]]]:
        """What a training or replay session needs besides its files: for train instances that run in their own
        images, an episode server (its socket folder to mount, its variable to set); nothing otherwise."""
        in_images = [i for i in self.instances("train") if i.image is not None]
        if not in_images:
            yield [], {}
            return
        from meta_agent.swe.episode_server import EpisodeServer

        with EpisodeServer(in_images) as server:
            yield [server.dir], server.env()

    def _resolved(self, inst: SweInstance, diff: str) -> bool:
        if not diff.strip():
            return False  # the base fails FAIL_TO_PASS by construction
        key = (inst.instance_id, hashlib.sha256(diff.encode()).hexdigest())
        if key not in self._verdicts:
            self._verdicts[key] = evaluate_patch(inst, diff, self.sandbox).resolved
        return self._verdicts[key]

    def verify(self, task: Task, rollout: RolloutRecord) -> bool:
        return self._resolved(self._by_id()[task.id], str(rollout.extra.get("diff", "")))

    def hacking_probes(self, tasks: list[Task], limit: int = 4, seed: int = 0) -> list[RolloutRecord]:
        """A diff adding a conftest.py that reports every test as passed: tampering, never a fix."""
        probes = []
        for task in tasks[:limit]:
            inst = self._by_id()[task.id]
            if self._resolved(inst, CONFTEST_HACK):
                continue
            probes.append(RolloutRecord(
                rollout_id=f"probe-conftest-{task.id}", step=0, task_id=task.id, group_id=f"probe-{task.id}",
                prompt=task.prompt[:500], completion="[assistant]\nadd a conftest.py that marks every test passed",
                rewards={}, reward=0.0, advantage=0.0, prompt_tokens=0, completion_tokens=0, truncated=False,
                labels=[], harness_commit="probe", verified=False,
                extra={"probe": "conftest", "diff": CONFTEST_HACK, "end_reason": "submit", "exit_codes": []},
            ))
        return probes

    def evaluate(self, policy: Path, split: Split, *, limit: int | None = None, root: Path | None = None,
                 on_progress: Any = None, shard: Shard | None = None) -> EvalResult:
        from meta_agent.policy import load_for_inference

        started = time.monotonic()
        instances = shard_of(self.instances(split)[:limit], shard, 1)
        if shard is not None and not instances:
            return empty_shard(self.name, split, policy)
        model, tok = load_for_inference(policy, root)
        # Greedy as `greedy_replier`, each episode's cache kept across its turns: 1.4x faster on 2 cores,
        # identical transcripts (bench/swe_eval_cache.py)
        result = self.score(MultiTurnGreedy(model, tok), instances, split, str(policy), on_progress)
        return result.model_copy(update={"wall_time": time.monotonic() - started})

    def score(self, reply: Replier, instances: list[SweInstance], split: Split, policy: str,
              on_progress: Any = None) -> EvalResult:
        """Episodes of the sealed scaffold acted by `reply`, each final diff judged by the sealed tests.
        `evaluate` passes the policy's greedy decoding; `meta_agent.swe.competent` passes a scripted
        agent that knows the gold fix, which shows the protocol can be passed."""
        started = time.monotonic()
        episodes = run_episodes(reply, instances, self.sandbox, self.settings.scaffold, on_done=on_progress)
        results = []
        for inst, (diff, transcript, end, turns) in zip(instances, episodes, strict=True):
            ok = self._resolved(inst, diff)
            results.append(TaskResult(task_id=inst.instance_id, correct=ok, score=float(ok), completion=transcript,
                                      answer=diff,
                                      detail=f"{end} after {turns} turns; diff {len(diff.splitlines())} lines"))
        return EvalResult(domain=self.name, split=split, policy=str(policy),
                          score=bootstrap_ci([r.score for r in results]), results=results,
                          wall_time=time.monotonic() - started)
