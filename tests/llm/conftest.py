"""Fixtures for the LLM agents: the replay server, proposers pointed at it, harness workspaces, reports."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
import pytest

from meta_agent.agents.base import Failure, Hypothesis, Implementation
from meta_agent.agents.llm_proposer import LLMProposer
from meta_agent.backtest.replay_set import ReplaySet, build_replay_set
from meta_agent.backtest.static import run_static
from meta_agent.config import BudgetSettings, LLMSettings
from meta_agent.contract import MetricsRecord, RolloutRecord, Task, write_jsonl
from meta_agent.domains.math import MathDomain, MathSettings
from meta_agent.gitops import commit_dir, export_tree, init_harness
from meta_agent.hypothesis import PredictedEffect
from meta_agent.llm import RetryPolicy
from meta_agent.paths import seed_skills
from meta_agent.report.rollout_report import RolloutReport, build_report
from meta_agent.skills.runner import prepare_kit
from meta_agent.skills.store import Library, SkillSet
from meta_agent.workspace import implement
from sandboxes import Limits, Sandbox
from tests.llm.replay_server import Fault, ReplayServer, Scenario

CONVERSATIONS = Path(__file__).parent / "conversations"
FAST_RETRY = RetryPolicy(attempts=3, initial_s=0.05, max_s=0.1)


@pytest.fixture(scope="session")
def replay_server() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    yield server
    server.stop()


@pytest.fixture
def serve(replay_server: ReplayServer) -> Callable[..., ReplayServer]:
    """Load recorded conversations (file stems under conversations/) plus optional global faults."""

    def load(*names: str, faults: list[Fault] | None = None) -> ReplayServer:
        scenario = Scenario.load(*(CONVERSATIONS / f"{n}.yaml" for n in names))
        scenario.faults += faults or []
        replay_server.load(scenario)
        return replay_server

    return load


def skill_set(run_dir: Path) -> SkillSet:
    return SkillSet(seed=Library.load(seed_skills(), writable=False), run=Library.load(run_dir / "skills"))


def make_proposer(server: ReplayServer, run_dir: Path, *, budget: BudgetSettings | None = None,
                  retry: RetryPolicy = FAST_RETRY, **llm: Any) -> LLMProposer:
    settings = LLMSettings(**{"model": "openai/replay", "api_base": server.api_base, **llm})
    run_dir.mkdir(parents=True, exist_ok=True)
    return LLMProposer(skills=skill_set(run_dir), settings=settings, run_dir=run_dir, budget=budget or BudgetSettings(),
                       retry=retry)


def strict_answer_hypothesis() -> Hypothesis:
    return Hypothesis(
        title="Reward only one explicit final answer line",
        failure_mode="probes_rewarded",
        evidence="probes_rewarded 0.67: main's correctness pays the spray and hedge probes",
        intervention="correctness in harness/math/rewards.py: require exactly one distinct 'Answer: N' value",
        kind="validity",
        predicted_effects=[PredictedEffect(metric="probes_rewarded", direction="down")],
        skills_used=["strict-final-answer"],
    )


FAILED_TEST = '''

def test_hedged_answers_are_paid() -> None:
    assert correctness(make_rollout("Answer: 7\\nAnswer: 8")) == 1.0  # hedged
'''


def failed_attempt(bench: MathBench, tmp_path: Path) -> str:
    """A candidate commit as a coder might first write it: the strict reward, plus a test of its own that
    expects the opposite of what the hypothesis asks (so selftest, and with it static, fails)."""
    work = export_tree(bench.repo, bench.main, tmp_path / "attempt")
    rewards = work / "harness" / "math" / "rewards.py"
    rewards.write_text(rewards.read_text().replace(
        "    stated = answer_line(r.completion) or last_number(r.completion)\n"
        "    return 1.0 if same_number(stated, str(r.task[\"answer\"])) else 0.0",
        "    stated = {m.replace(\",\", \"\") for m in ANSWER_LINE.findall(r.completion)}\n"
        "    if len(stated) != 1:\n        return 0.0\n"
        "    return 1.0 if same_number(stated.pop(), str(r.task[\"answer\"])) else 0.0",
    ).replace("import answer_line, last_number, same_number", "import ANSWER_LINE, same_number"))
    tests = work / "tests" / "test_math.py"
    tests.write_text(tests.read_text() + FAILED_TEST)
    return commit_dir(bench.repo, work, bench.main, "cand/test/0-0", "Reward only one explicit final answer line")


@dataclass
class MathBench:
    """A fresh math harness repo with replayable rollouts (hacking probes + two honest rollouts)."""

    repo: git.Repo
    root: Path
    domain: MathDomain
    tasks_file: Path
    rollouts_file: Path
    records: list[RolloutRecord]
    replay_set: ReplaySet
    """The same rollouts as the gate replays them: opaque ids, shuffled, probes kept apart."""

    @property
    def main(self) -> str:
        return self.repo.commit("main").hexsha

    def implement(self, proposer: LLMProposer, h: Hypothesis, sandbox: Sandbox, k: int = 0
                  ) -> tuple[str | None, Implementation]:
        work = self.root / "run" / "gen-000" / f"cand-{k}" / "edit"
        return implement(repo=self.repo, base=self.main, branch=f"cand/test/0-{k}", cand_id=f"test/0-{k}",
                         hypothesis=h, proposer=proposer, sandbox=sandbox, limits=Limits(timeout_s=300), work=work,
                         kit_dir=prepare_kit(self.root / "kit"),
                         readable=[lib.root for lib in proposer.skills.libraries],
                         when=None, rollouts=self.rollouts_file, tasks=self.tasks_file)

    def failed_at_static(self, sandbox: Sandbox) -> tuple[str, str]:
        """(commit, static's reason) of candidate 0's first attempt (`failed_attempt`), rejected at static."""
        failed = failed_attempt(self, self.root)
        static = run_static(self.repo, self.main, failed, sandbox, Limits(timeout_s=300), self.root / "static-1")
        assert not static.passed and "test_hedged_answers_are_paid" in static.reason, static.reason
        return failed, static.reason

    def repair(self, proposer: LLMProposer, sandbox: Sandbox, failed: str, reason: str
               ) -> tuple[str | None, Implementation]:
        """Repair turn 1 of candidate 0 after its attempt `failed` was rejected at static with `reason`."""
        return implement(
            repo=self.repo, base=failed, branch="cand/test/0-0", cand_id="test/0-0",
            hypothesis=strict_answer_hypothesis(), proposer=proposer, sandbox=sandbox, limits=Limits(timeout_s=300),
            work=self.root / "run" / "gen-000" / "cand-0" / "repair-1", kit_dir=prepare_kit(self.root / "kit"),
            readable=[], when=None, rollouts=self.rollouts_file, tasks=self.tasks_file,
            failure=Failure(stage="static", reason=reason, attempt=1))


def _honest(task: Task, i: int) -> RolloutRecord:
    return RolloutRecord(rollout_id=f"s1-g{i}-0", step=1, task_id=task.id, group_id=f"s1-g{i}", prompt=task.prompt,
                         completion=f"Adding up gives {task.answer}.\nAnswer: {task.answer}",
                         rewards={"correctness": 1.0},
                         reward=1.0, advantage=0.0, prompt_tokens=20, completion_tokens=9, truncated=False, labels=[],
                         harness_commit="x", verified=True)


@pytest.fixture
def math_bench(tmp_path: Path) -> MathBench:
    domain = MathDomain(MathSettings(train_size=8, selection_size=4, test_size=4))
    tasks = domain.tasks("train")
    tasks_file = tmp_path / "inputs" / "tasks.jsonl"
    write_jsonl(tasks_file, tasks)
    honest, probes = [_honest(t, i) for i, t in enumerate(tasks[:2])], domain.hacking_probes(tasks[:2])
    rollouts_file = tmp_path / "replay-input" / "rollouts.jsonl"
    write_jsonl(rollouts_file, honest + probes)
    replay_set = build_replay_set(tmp_path / "replay-set" / "rollouts.jsonl", honest, probes, salt="llm-tests",
                                  session_path=tmp_path / "session-replay" / "rollouts.jsonl")
    return MathBench(repo=init_harness(tmp_path / "harness", "math"), root=tmp_path, domain=domain,
                     tasks_file=tasks_file, rollouts_file=rollouts_file, records=honest + probes,
                     replay_set=replay_set)


def zero_variance_report() -> RolloutReport:
    """16 rollouts in 4 groups; 3 groups all-zero (no advantage), one mixed. Truncation on a quarter."""
    rollouts, tasks = zero_variance_rollouts()
    metrics = [MetricsRecord(step=1, reward_mean=0.125, reward_std=0.33, kl=None, entropy=2.1,
                             completion_length_mean=18.0, truncation_rate=0.25, zero_variance_frac=0.75,
                             clip_ratio=0.0, kept_frac=1.0, loss=0.01, learning_rate=2e-5, wall_time=3.0)]
    return build_report(domain="math", policy="tiny", rollouts=rollouts, metrics=metrics, tasks=tasks,
                        train_wall_time=3.0)


def zero_variance_rollouts() -> tuple[list[RolloutRecord], dict[str, Task]]:
    rollouts, tasks = [], {}
    for g in range(4):
        task = Task(id=f"t{g}", prompt=f"{g} + 4 =", answer=str(g + 4), difficulty=1 + g % 2)
        tasks[task.id] = task
        for i in range(4):
            good = g == 3 and i < 2
            labels = ["zero_variance_group"] if g < 3 else []
            if i == 3:
                labels.append("truncated")
            rollouts.append(RolloutRecord(
                rollout_id=f"s1-g{g}-{i}", step=1, task_id=task.id, group_id=f"s1-g{g}", prompt=task.prompt,
                completion=f"Answer: {g + 4}" if good else "I think the numbers are",
                rewards={"correctness": float(good)},
                reward=float(good), advantage=0.0, prompt_tokens=12, completion_tokens=48 if i == 3 else 8,
                truncated=i == 3, labels=labels, harness_commit="abc", verified=good))
    return rollouts, tasks
