"""What every part of a run shares: its settings, repo, sandbox, journal, budget and progress display.

A leaf module: it imports nothing of the loop, so proposers, stages and commands may depend on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import git

from meta_agent.agents.base import Proposer
from meta_agent.config import EvolveConfig
from meta_agent.crashpoints import crashpoint
from meta_agent.domains.base import Domain
from meta_agent.errors import BudgetExhausted
from meta_agent.eventlog import EventLog
from meta_agent.execution.base import Executor
from meta_agent.execution.local import LocalExecutor
from meta_agent.execution.settings import ExecutorSettings
from meta_agent.harness_runner import StepSeen
from meta_agent.journal import CommitTime, Event
from meta_agent.journal_keys import time_key
from meta_agent.skills.store import SkillSet
from sandboxes import Sandbox

E = TypeVar("E", bound=Event)

__all__ = ["Budget", "BudgetExhausted", "Reporter", "RunContext"]


class Reporter(Protocol):
    """Where a run shows its progress (the CLI's progress bar; tests pass a silent one)."""

    def phase(self, text: str) -> None: ...

    def training_step(self, seen: StepSeen | None = None) -> None:
        """One training run's progress (None: a step that finished elsewhere, seen only as a count)."""

    def tasks_answered(self, n: int) -> None:
        """An evaluation in this process answered `n` more tasks."""


@dataclass
class Budget:
    """Hard limits checked before every step; `extra_checks` return a reason to stop (e.g. LLM spend)."""

    wall_seconds: float | None = None
    started: float = field(default_factory=time.monotonic)
    extra_checks: list[Callable[[], str | None]] = field(default_factory=list)

    def check(self, before: str) -> None:
        if self.wall_seconds is not None and time.monotonic() - self.started > self.wall_seconds:
            raise BudgetExhausted(f"wall-clock budget of {self.wall_seconds / 60:.1f} min used up before {before}")
        for check in self.extra_checks:
            reason = check()
            if reason:
                raise BudgetExhausted(f"{reason} (before {before})")


@dataclass
class RunContext:
    cfg: EvolveConfig
    run_dir: Path
    run_id: str
    repo: git.Repo
    domain: Domain
    sandbox: Sandbox
    root_policy: Path
    tasks_file: Path
    skills: SkillSet
    proposer: Proposer
    log: EventLog
    reporter: Reporter
    budget: Budget
    kit_dir: Path
    repairs: list[str] = field(default_factory=list)
    """What picking the run up again had to fix (a torn journal line, a checkout behind main)."""
    executor: Executor = field(default_factory=lambda: LocalExecutor(ExecutorSettings()))
    """Where the generation's candidate backtests run (`execution/`); the driver journals their results."""

    def step(self, key: str, model: type[E], fn: Callable[[], E]) -> E:
        """Run `fn` unless step `key` finished earlier; journal the event it returns."""
        done = self.log.done(key, model)
        if done is not None:
            return done
        self.budget.check(key)
        event = fn()
        crashpoint("step/after-work", self.run_dir)
        self.log.append(event, key=key)
        return event

    def when(self, key: str) -> str:
        """The date for the commit made under `key`: the real time it was first made, journaled first, so
        that a resumed run makes the identical commit."""
        return f"{self.step(time_key(key), CommitTime, lambda: CommitTime(unix=int(time.time()))).unix} +0000"

    def train_kwargs(self, policy: Path, seed: int, history: Path | None) -> dict[str, Any]:
        sb = self.cfg.sandbox
        return dict(domain=self.domain, sandbox=self.sandbox, limits=sb.limits(), policy=policy,
                    root_policy=self.root_policy, steps=self.cfg.steps, seed=seed, tasks_file=self.tasks_file,
                    history=history, train_timeout=sb.train_timeout_s, tracker=self.cfg.tracker,
                    on_step=self.reporter.training_step)
