"""The unit of work an executor runs away from the driver: one candidate's training backtest.

A `TrainJob` is plain data (paths, commits, seeds, the run's settings), so that a worker process
or a Ray task on another node can rebuild what it needs (domain, sandbox, harness repo, the
control's run) from files the driver wrote before submitting it. The worker trains the commit in
its own sandbox session, evaluates the checkpoint on the sealed selection split and returns a
`StageResult`; the driver alone journals it, decides and merges (ARCHITECTURE.md: verdicts and
the journal never leave the trusted driver).
"""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git
from pydantic import BaseModel

from meta_agent.backtest.train_stage import Control, invalid_share, run_train_stage
from meta_agent.domains import Domain, EvalResult, domain_for
from meta_agent.fsutil import atomic_write_text, fresh_dir
from meta_agent.report.render import write_report
from meta_agent.training import load_trained
from meta_agent.verdicts import StageResult
from sandboxes import Sandbox

WORKER_FILE = "train.worker.json"
"""Written beside a job's output when a worker starts it: which host and process run it (and the attempt)."""


class TrainJob(BaseModel):
    """One candidate's train stage, as data."""

    key: str
    """The journal key its result is appended under (by the driver)."""
    stage_id: str
    config: dict[str, object]
    """The run's EvolveConfig (JSON): domain settings, sandbox limits, training timeout, tracker."""
    harness: str
    commit: str
    main_commit: str
    policy: str
    root_policy: str
    history: str | None
    tasks_file: str
    seed: int
    steps: int
    control_dir: str
    control_eval: str
    guard_labels: list[str]
    level: float
    cand_dir: str
    eval_limit: int | None


@dataclass
class JobEnv:
    """What a job needs that is not data; the driver passes its own, a worker builds one from the job."""

    domain: Domain
    sandbox: Sandbox
    repo: git.Repo
    on_step: Callable[[int], None] | None = None


def build_env(job: TrainJob) -> JobEnv:
    """The domain, sandbox backend and repo of the job's run; a worker keeps them for its next jobs."""
    return _env_for(json.dumps(job.config, sort_keys=True), job.harness)


@functools.lru_cache(maxsize=4)
def _env_for(config_json: str, harness: str) -> JobEnv:
    from meta_agent.config import EvolveConfig
    from meta_agent.sealed import sealed_backend

    cfg = EvolveConfig.model_validate_json(config_json)
    return JobEnv(domain=domain_for(cfg), sandbox=sealed_backend(cfg.sandbox.backend), repo=git.Repo(harness))


def run_train_job(job: TrainJob, env: JobEnv | None = None, attempt: int | None = 1) -> StageResult:
    """Train, evaluate and compare one candidate. Whatever it raises fails the candidate at this stage
    (the same words as an inline stage), so a bad candidate never reaches the executor's retry logic,
    which is for lost workers only. `attempt`: the local executor's count (Ray keeps its own: None)."""
    started = time.monotonic()
    cand_dir = Path(job.cand_dir)
    cand_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(cand_dir / WORKER_FILE, json.dumps(
        {"host": socket.gethostname(), "pid": os.getpid(), "attempt": attempt, "started": time.time()}))
    try:
        return _train(job, env or build_env(job))
    except Exception as e:  # one candidate's failure, whatever raised it, is that candidate's
        from meta_agent.evolve.candidate import failure_text

        return StageResult(stage="train", passed=False, seconds=time.monotonic() - started,
                           reason=f"train raised {failure_text(e)}")


def _train(job: TrainJob, env: JobEnv) -> StageResult:
    from meta_agent.config import EvolveConfig

    cfg = EvolveConfig.model_validate(job.config)
    root_policy = Path(job.root_policy)
    tasks_file = Path(job.tasks_file)
    control_run = load_trained(Path(job.control_dir), env.domain, str(root_policy), tasks_file)
    control = Control(run=control_run, eval=EvalResult.model_validate_json(Path(job.control_eval).read_text()),
                      invalid_share=invalid_share(control_run, env.domain.invalid_labels))
    sb = cfg.sandbox
    train_kwargs = dict(sandbox=env.sandbox, limits=sb.limits(), policy=Path(job.policy), root_policy=root_policy,
                        steps=job.steps, seed=job.seed, tasks_file=tasks_file,
                        history=Path(job.history) if job.history else None, train_timeout=sb.train_timeout_s,
                        tracker=cfg.tracker, on_step=env.on_step or (lambda _n: None))
    out = fresh_dir(Path(job.cand_dir) / "train")
    stage, trained, result = run_train_stage(
        repo=env.repo, commit=job.commit, main_commit=job.main_commit, domain=env.domain, control=control,
        guard_labels=job.guard_labels, level=job.level, train_kwargs=train_kwargs, out_dir=out,
        work_dir=Path(job.cand_dir) / "work-train", eval_limit=job.eval_limit, root_policy=root_policy,
        seed=job.seed)
    if trained is not None:  # the lineage page links each backtest's report beside main's
        write_report(trained.report, out)
    if result is not None:
        atomic_write_text(Path(job.cand_dir) / "eval.json", result.model_dump_json(indent=2))
    return stage
