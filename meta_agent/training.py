"""One sandboxed training run of a harness commit, labelled by the sealed verifier and diagnostics.

Used by `meta-agent rollout` and by every train step of the evolve loop:
export the commit -> `harness train` -> mark each rollout with the sealed verifier's
verdict -> `harness diagnose` for the final labels -> RolloutReport.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git

from meta_agent.contract import (
    CheckpointManifest,
    ContractError,
    DiagnoseRecord,
    MetricsRecord,
    RolloutRecord,
    Task,
    TrainSummary,
    read_json,
    read_jsonl,
    write_jsonl,
)
from meta_agent.domains import Domain
from meta_agent.fsutil import fresh_dir
from meta_agent.gitops import export_tree
from meta_agent.harness_runner import HarnessRunner, StepSeen, TrainOutput
from meta_agent.policy import base_model_of
from meta_agent.report.rollout_report import RolloutReport, build_report
from meta_agent.tracking import Tracker
from meta_agent.tracking.sandbox_env import tracker_env
from meta_agent.train_memo import TrainMemo, reused_marker
from meta_agent.untrusted_files import is_regular_file, read_bytes
from sandboxes import Limits, Sandbox

TRAIN_TASKS = "train_tasks.jsonl"
VERIFIED = "rollouts.verified.jsonl"
DIAGNOSE = "diagnose.jsonl"


@dataclass
class TrainedRun:
    output: TrainOutput
    rollouts: list[RolloutRecord]
    """With `verified` and the final diagnostic labels."""
    report: RolloutReport

    @property
    def checkpoint(self) -> Path:
        return self.output.checkpoint


def write_train_tasks(domain: Domain, inputs_dir: Path) -> Path:
    """The only split that ever reaches a harness sandbox."""
    path = inputs_dir / TRAIN_TASKS
    if not path.is_file():
        write_jsonl(path, domain.export_train(inputs_dir))
    return path


def policy_mounts(policy: Path, root_policy: Path) -> list[Path]:
    """Directories a policy needs readable: itself and, for a LoRA checkpoint, its base model.

    The base a (harness-written) LoRA manifest names must be the run's root policy: any other path
    would be mounted into the next training sandbox on the harness's word.
    """
    base = base_model_of(policy)
    if base.resolve() != root_policy.resolve() and base.resolve() != policy.resolve():
        raise ContractError(f"{policy / 'manifest.json'}: base_model {str(base)!r} is not the run's policy "
                            f"{root_policy}; a checkpoint must stand on the model the run started from")
    return sorted({policy.resolve(), base.resolve()})


def label_rollouts(domain: Domain, rollouts: list[RolloutRecord], tasks: dict[str, Task]) -> list[RolloutRecord]:
    """Copy of the rollouts with the sealed verifier's verdict filled in."""
    return [r.model_copy(update={"verified": domain.verify(tasks[r.task_id], r)}) for r in rollouts]


def load_labelled(out_dir: Path) -> list[RolloutRecord]:
    """A finished training dir's rollouts with verifier verdicts and the labels `diagnose` gave them."""
    labels = {d.rollout_id: d.labels for d in read_jsonl(out_dir / DIAGNOSE, DiagnoseRecord)}
    return [r.model_copy(update={"labels": labels.get(r.rollout_id, r.labels)})
            for r in read_jsonl(out_dir / VERIFIED, RolloutRecord)]


def load_trained(out_dir: Path, domain: Domain, policy: str, tasks_file: Path) -> TrainedRun:
    """A finished training dir read back (validated) from disk, e.g. when a run resumes."""
    tasks = {t.id: t for t in read_jsonl(tasks_file, Task)}
    output = TrainOutput(
        out_dir=out_dir,
        rollouts=read_jsonl(out_dir / "rollouts.jsonl", RolloutRecord),
        metrics=read_jsonl(out_dir / "metrics.jsonl", MetricsRecord),
        manifest=read_json(out_dir / "checkpoint" / "manifest.json", CheckpointManifest),
        summary=read_json(out_dir / "train_summary.json", TrainSummary),
    )
    labelled = load_labelled(out_dir)
    report_file = out_dir / "report.json"
    report = (RolloutReport.model_validate_json(read_bytes(report_file)) if is_regular_file(report_file) else
              build_report(domain=domain.name, policy=policy, rollouts=labelled, metrics=output.metrics, tasks=tasks,
                           train_wall_time=output.summary.wall_time))
    return TrainedRun(output=output, rollouts=labelled, report=report)


def train_commit(
    *,
    repo: git.Repo,
    commit: str,
    domain: Domain,
    sandbox: Sandbox,
    limits: Limits,
    policy: Path,
    root_policy: Path,
    steps: int,
    seed: int,
    work_dir: Path,
    out_dir: Path,
    tasks_file: Path,
    history: Path | None = None,
    train_timeout: float | None = None,
    on_step: Callable[[StepSeen], None] | None = None,
    diagnose_commit: str | None = None,
    tracker: Tracker = "none",
    memo: TrainMemo | None = None,
) -> TrainedRun:
    """Train `policy` for `steps` under harness@commit; all harness code runs in `sandbox`.

    The rollouts are labelled by the diagnostics of `diagnose_commit` (default: the trained commit).
    A candidate's run is labelled by main's diagnostics: its own could simply not flag what it breaks.
    With `memo`, a training of the same tree under the same inputs, stored by an earlier run, is copied
    into `out_dir` instead (`train_memo`), and a fresh one is stored.
    """
    diagnoser = diagnose_commit or commit
    commits, paths = {"trained": commit, "diagnose": diagnoser}, {"policy": str(policy), "out": str(out_dir)}
    tasks = {t.id: t for t in read_jsonl(tasks_file, Task)}
    reused_marker(out_dir).unlink(missing_ok=True)  # an earlier attempt's
    key = None
    if memo is not None:
        try:
            key = memo.key(repo=repo, commit=commit, diagnose_commit=diagnoser, policy=policy, root_policy=root_policy,
                           tasks_file=tasks_file, history=history, steps=steps, seed=seed, limits=limits,
                           sandbox=type(sandbox).__name__, tracker=tracker)
            record = memo.fetch(key, out_dir, commits, paths) if key else None
            if record is not None:  # its report is not stored (it names the old commit): rebuilt from the rest
                run = load_trained(out_dir, domain, str(root_policy), tasks_file)
                run.output.seconds = float(record.get("seconds") or 0.0)
                return run
        except Exception:  # a doubt about the store costs a training, never the run
            reused_marker(out_dir).unlink(missing_ok=True)
            fresh_dir(out_dir)
    run = _train(repo=repo, commit=commit, domain=domain, sandbox=sandbox, limits=limits, policy=policy,
                 root_policy=root_policy, steps=steps, seed=seed, work_dir=work_dir, out_dir=out_dir,
                 tasks_file=tasks_file, tasks=tasks, history=history, train_timeout=train_timeout, on_step=on_step,
                 diagnose_commit=diagnose_commit, tracker=tracker)
    if memo is not None and key:
        with contextlib.suppress(Exception):  # not kept: the next run trains it again
            memo.store(key, out_dir, commits, paths, run.output.seconds)
    return run


def _train(*, repo: git.Repo, commit: str, domain: Domain, sandbox: Sandbox, limits: Limits, policy: Path,
           root_policy: Path, steps: int, seed: int, work_dir: Path, out_dir: Path, tasks_file: Path,
           tasks: dict[str, Task], history: Path | None, train_timeout: float | None,
           on_step: Callable[[StepSeen], None] | None, diagnose_commit: str | None, tracker: Tracker) -> TrainedRun:
    workdir = export_tree(repo, commit, work_dir)
    readable = [tasks_file.parent, *policy_mounts(policy, root_policy)]
    if history is not None:
        readable.append(history.parent)
    verified_file = out_dir / VERIFIED
    with HarnessRunner(sandbox, workdir, commit=commit, readable=readable, writable=[out_dir],
                       limits=limits, domain=domain) as runner:
        output = runner.train(policy=policy, steps=steps, seed=seed, out=out_dir, tasks=tasks_file,
                              history=history, timeout=train_timeout, on_step=on_step,
                              env=tracker_env(tracker, out_dir))
        write_jsonl(verified_file, label_rollouts(domain, output.rollouts, tasks))
        if diagnose_commit in (None, commit):
            runner.diagnose(rollouts=verified_file, tasks=tasks_file, out=out_dir / DIAGNOSE)
    if diagnose_commit not in (None, commit):
        assert diagnose_commit is not None
        _diagnose_with(repo, diagnose_commit, sandbox, limits, verified_file, tasks_file, work_dir, out_dir)
    final = load_labelled(out_dir)
    report = build_report(domain=domain.name, policy=str(root_policy), rollouts=final, metrics=output.metrics,
                          tasks=tasks, train_wall_time=output.summary.wall_time)
    return TrainedRun(output=output, rollouts=final, report=report)


def _diagnose_with(repo: git.Repo, commit: str, sandbox: Sandbox, limits: Limits, verified_file: Path,
                   tasks_file: Path, work_dir: Path, out_dir: Path) -> None:
    """Label `verified_file` with the diagnostics of another harness commit, in its own session."""
    workdir = export_tree(repo, commit, work_dir.with_name(work_dir.name + "-diagnose"))
    labels_dir = out_dir / "trusted-diagnose"
    with HarnessRunner(sandbox, workdir, commit=commit, readable=[out_dir, tasks_file.parent],
                       writable=[labels_dir], limits=limits) as runner:
        runner.diagnose(rollouts=verified_file, tasks=tasks_file, out=labels_dir / DIAGNOSE)
    (labels_dir / DIAGNOSE).replace(out_dir / DIAGNOSE)
