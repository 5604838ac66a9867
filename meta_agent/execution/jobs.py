"""The units of work an executor runs away from the driver.

- `TrainJob`: one candidate's training backtest (train, sealed selection evaluation, paired comparison).
- `RunJob`: a training run of some harness commit and/or a sealed evaluation of a policy: main's run
  with its control evaluation, a noise-floor rerun, a generation of the static arm, a final test
  evaluation, one shard of a sealed evaluation.

A job is plain data (paths, commits, seeds, the run's settings), so that a worker process or a Ray
task on another node can rebuild what it needs (domain, sandbox, harness repo, the control's run)
from files the driver wrote before submitting it, and it returns plain data. The driver alone
journals results, decides and merges (ARCHITECTURE.md: verdicts and the journal never leave the
trusted driver).
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
from typing import Annotated, Any, Literal

import git
from pydantic import BaseModel, Field, TypeAdapter

from meta_agent.backtest.train_stage import Control, invalid_share, run_train_stage
from meta_agent.domains import Domain, EvalResult, domain_for
from meta_agent.domains.base import Shard, Split
from meta_agent.errors import UserError, failure_text
from meta_agent.eval_memo import MEMO_DIR, evaluate_memoized
from meta_agent.fsutil import atomic_write_text, fresh_dir
from meta_agent.harness_runner import StepSeen
from meta_agent.journal import Evaluated, Trained
from meta_agent.report.render import write_report
from meta_agent.train_memo import TrainMemo, reuse_root
from meta_agent.training import load_trained, train_commit
from meta_agent.verdicts import StageResult
from sandboxes import Sandbox

WORKER_FILE = "train.worker.json"
"""Which host and process ran a training (and the attempt): in a backtest's candidate dir when it starts, in a
`RunJob`'s output dir when it has trained (with its start and end)."""


@dataclass
class JobEnv:
    """What a job needs that is not data; the driver passes its own, a worker builds one from the job."""

    domain: Domain
    sandbox: Sandbox
    repo: git.Repo
    on_step: Callable[[StepSeen], None] | None = None
    on_eval: Callable[[int], None] | None = None
    """Called with the number of tasks an evaluation run in this process has just answered."""


class Job(BaseModel):
    """What every job carries: its journal key and what a worker needs to rebuild the run's environment."""

    key: str
    """The journal key its result is appended under (by the driver)."""
    config: dict[str, object]
    """The run's EvolveConfig (JSON): domain settings, sandbox limits, training timeout, tracker."""
    harness: str
    root_policy: str
    tasks_file: str

    def execute(self, env: JobEnv, attempt: int | None = 1) -> BaseModel:
        raise NotImplementedError

    def isolated(self, attempt: int | None) -> BaseModel:
        """The job in a worker: whatever it raises comes back as its failed result, never as a dead worker
        (a dead worker means a lost machine or process, which is retried)."""
        try:
            return self.execute(build_env(self), attempt)
        except Exception as e:
            return self.failed(failure_text(e))

    def failed(self, why: str) -> BaseModel:
        raise NotImplementedError

    def lost(self, attempts: int, why: str) -> BaseModel:
        """The result of a job whose worker died on every attempt."""
        return self.failed(f"the worker running it was lost {attempts} time(s) ({why})")

    def parse(self, data: str | bytes) -> BaseModel:
        """Its result, from the JSON a worker sent back."""
        raise NotImplementedError

    def memo_dir(self) -> Path | None:
        """Where sealed answers are kept by the weights they were decoded for (`eval_memo`): shared by every
        run (`reuse_across_runs`, the default), else the run's own."""
        shared = reuse_root() if self.settings().reuse_across_runs else None
        if shared is not None:
            return shared / "evaluations"
        run_dir = self.run_dir()
        return run_dir / MEMO_DIR if run_dir else None

    def run_dir(self) -> Path | None:
        run_dir = self.config.get("run_dir")
        return Path(str(run_dir)) if run_dir else None

    def settings(self) -> Any:
        from meta_agent.config import EvolveConfig

        return EvolveConfig.model_validate(self.config)

    def train_kwargs(self, env: JobEnv, policy: Path, seed: int, history: Path | None, steps: int) -> dict[str, Any]:
        """`train_commit`'s settings for this run (the same in the driver and in a worker)."""
        cfg = self.settings()
        root = reuse_root() if cfg.reuse_across_runs else None
        memo = (TrainMemo(root / "trainings", {"domain": env.domain.name, "settings": cfg.result_settings()})
                if root else None)
        return dict(sandbox=env.sandbox, limits=cfg.sandbox.limits(), policy=policy, root_policy=Path(self.root_policy),
                    steps=steps, seed=seed, tasks_file=Path(self.tasks_file), history=history,
                    train_timeout=cfg.sandbox.train_timeout_s, tracker=cfg.tracker, on_step=env.on_step, memo=memo)


class TrainJob(Job):
    """One candidate's train stage (or its confirmation rung), as data."""

    kind: Literal["backtest"] = "backtest"
    rung: Literal["train", "confirm"] = "train"
    """train: the short rung (RUN/gen-G/cand-K/train/, eval.json beside it); confirm: the candidate's run
    continued from its train checkpoint, judged against the longer control (cand-K/confirm/, with its
    eval.json inside), its stage named `confirm` and its reason saying the total steps."""
    total_steps: int | None = None
    """confirm: steps of both rungs together (for the reason and the `steps` metric)."""
    ci_seed: int | None = None
    """Seed of the paired bootstrap (default `seed`; the confirmation rung trains with another seed)."""
    stage_id: str
    commit: str
    main_commit: str
    policy: str
    history: str | None
    seed: int
    steps: int
    control_dir: str
    control_eval: str
    guard_labels: list[str]
    level: float
    cand_dir: str
    eval_limit: int | None

    def execute(self, env: JobEnv, attempt: int | None = 1) -> StageResult:
        return run_train_job(self, env, attempt)

    def isolated(self, attempt: int | None) -> StageResult:
        return run_train_job(self, None, attempt)

    def failed(self, why: str) -> StageResult:
        return StageResult(stage=self.rung, passed=False,
                           reason=f"{self.rung}: {why}; it counts as this candidate's failure")

    def parse(self, data: str | bytes) -> StageResult:
        return StageResult.model_validate_json(data)


class RunJobResult(BaseModel):
    """What a `RunJob` did: its training run and/or its evaluation, or why it failed."""

    trained: Trained | None = None
    evaluated: Evaluated | None = None
    error: str | None = None

    def ok(self, what: str) -> RunJobResult:
        """Itself, unless the job failed: then the run stops with the reason (a failure of main's own
        training or of a sealed evaluation is the run's, not a candidate's; the run can be resumed)."""
        if self.error is not None:
            raise JobFailed(f"{what} failed: {self.error}")
        return self


    def trained_run(self, what: str) -> Trained:
        """Its training run (a job that trained), unless the job failed (see `ok`)."""
        trained = self.ok(what).trained
        if trained is None:
            raise JobFailed(f"{what} returned no training run")
        return trained


class JobFailed(UserError):
    """A `RunJob` that failed in a worker process or on a Ray node (in the driver it raises its own error)."""


class RunJob(Job):
    """Train `policy` under harness@commit into `out` (rollouts, report, checkpoint), then evaluate the
    checkpoint on a sealed split; `commit` None evaluates `policy` itself, `eval_split` None skips it."""

    kind: Literal["run"] = "run"
    label: str
    """What it is, for progress lines and errors ("main's training", "noise rerun 1")."""
    policy: str
    seed: int = 0
    steps: int = 0
    commit: str | None = None
    history: str | None = None
    out: str | None = None
    work: str | None = None
    eval_split: Split | None = None
    eval_out: str | None = None
    eval_limit: int | None = None
    shard: Shard | None = None
    """(i, n): only the i-th of n consecutive slices of the split's tasks (`domains.base.shard_of`)."""
    tolerated: bool = False
    """Its failure comes back as its result in the driver too, as from a worker (a noise rerun: the run goes
    on without it); otherwise a job run in the driver raises its own error."""

    def execute(self, env: JobEnv, attempt: int | None = 1) -> RunJobResult:
        policy, trained, evaluated = Path(self.policy), None, None
        started = time.time()
        if self.commit is not None:
            assert self.out is not None and self.work is not None
            history = Path(self.history) if self.history else None
            run = train_commit(repo=env.repo, commit=self.commit, domain=env.domain, out_dir=fresh_dir(Path(self.out)),
                               work_dir=Path(self.work),
                               **self.train_kwargs(env, policy, self.seed, history, self.steps))
            write_report(run.report, Path(self.out))
            atomic_write_text(Path(self.out) / WORKER_FILE, json.dumps(  # where and when it trained
                {"host": socket.gethostname(), "pid": os.getpid(), "attempt": attempt, "started": started,
                 "finished": time.time()}))
            trained = Trained(out=self.out, checkpoint=str(run.checkpoint), reward=run.report.reward_mean,
                              train_seconds=run.output.seconds)
            policy = run.checkpoint
        if self.eval_split is not None:
            assert self.eval_out is not None
            result = evaluate_memoized(env.domain, policy, self.eval_split, env.on_eval, memo_dir=self.memo_dir(),
                                       limit=self.eval_limit, root=Path(self.root_policy), shard=self.shard)
            atomic_write_text(Path(self.eval_out), result.model_dump_json(indent=2))
            evaluated = Evaluated(score=result.score.mean, eval_seconds=result.wall_time)
        return RunJobResult(trained=trained, evaluated=evaluated)

    def failed(self, why: str) -> RunJobResult:
        return RunJobResult(error=why)

    def parse(self, data: str | bytes) -> RunJobResult:
        return RunJobResult.model_validate_json(data)


AnyJob = Annotated[TrainJob | RunJob, Field(discriminator="kind")]
_JOBS: TypeAdapter[TrainJob | RunJob] = TypeAdapter(AnyJob)


def preload() -> None:
    """Import what a job imports inside its functions (at first use), so a warm worker has it before its
    first job. Plain imports, not module names in strings: the architecture test sees them for what they are."""
    from meta_agent.config import EvolveConfig  # noqa: F401
    from meta_agent.sealed import sealed_backend  # noqa: F401


def job_from_json(data: str | bytes) -> TrainJob | RunJob:
    """A job a worker received (the driver sent `job.model_dump_json()`)."""
    return _JOBS.validate_json(data)


def build_env(job: Job) -> JobEnv:
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
    atomic_write_text(cand_dir / (WORKER_FILE if job.rung == "train" else f"{job.rung}.worker.json"), json.dumps(
        {"host": socket.gethostname(), "pid": os.getpid(), "attempt": attempt, "started": time.time()}))
    try:
        return _train(job, env or build_env(job))
    except Exception as e:  # one candidate's failure, whatever raised it, is that candidate's
        return StageResult(stage=job.rung, passed=False, seconds=time.monotonic() - started,
                           reason=f"{job.rung} raised {failure_text(e)}")


def _train(job: TrainJob, env: JobEnv) -> StageResult:
    root_policy = Path(job.root_policy)
    tasks_file = Path(job.tasks_file)
    control_run = load_trained(Path(job.control_dir), env.domain, str(root_policy), tasks_file)
    control = Control(run=control_run, eval=EvalResult.model_validate_json(Path(job.control_eval).read_text()),
                      invalid_share=invalid_share(control_run, env.domain.invalid_labels))
    train_kwargs = job.train_kwargs(env, Path(job.policy), job.seed, Path(job.history) if job.history else None,
                                    job.steps)
    out = fresh_dir(Path(job.cand_dir) / job.rung)
    stage, trained, result = run_train_stage(
        repo=env.repo, commit=job.commit, main_commit=job.main_commit, domain=env.domain, control=control,
        guard_labels=job.guard_labels, level=job.level, train_kwargs=train_kwargs, out_dir=out,
        work_dir=Path(job.cand_dir) / f"work-{job.rung}", eval_limit=job.eval_limit, root_policy=root_policy,
        seed=job.seed if job.ci_seed is None else job.ci_seed, on_eval=env.on_eval, memo_dir=job.memo_dir(),
        run_dir=job.run_dir())
    if trained is not None:  # the lineage page links each backtest's report beside main's
        write_report(trained.report, out)
    if result is not None:
        where = Path(job.cand_dir) if job.rung == "train" else out
        atomic_write_text(where / "eval.json", result.model_dump_json(indent=2))
    if job.rung == "confirm":
        total = job.total_steps
        stage = stage.model_copy(update={"stage": "confirm", "metrics": {**stage.metrics, "steps": total},
                                         "reason": f"after {total} steps: {stage.reason}"})
    return stage
