"""Runs the harness verbs (`python -m harness ...`) inside a sandbox and validates what comes back.

This is the only way meta-agent executes harness code. A session is opened on an
exported checkout of one harness commit; it sees the run's model cache and inputs
read-only and exactly one output directory read-write. Sealed splits never exist
as files it could see.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from meta_agent.contract import (
    CheckpointManifest,
    ContractError,
    DiagnoseRecord,
    MetricsRecord,
    ReplayRecord,
    RolloutRecord,
    TrainSummary,
    read_json,
    read_jsonl,
)
from meta_agent.errors import UserError
from meta_agent.thread_share import THREADS_FILE_ENV, share_file
from meta_agent.untrusted_files import audit_tree, read_bytes, scrub_tree
from sandboxes import Limits, Mount, RunResult, Sandbox, Session

R = TypeVar("R", ReplayRecord, DiagnoseRecord)


class HarnessError(UserError, RuntimeError):
    """The harness failed (crashed, timed out, ran out of memory, or wrote invalid output)."""

    def __init__(self, verb: str, reason: str) -> None:
        super().__init__(f"harness {verb} failed: {reason}")
        self.verb = verb
        self.reason = reason


@dataclass
class TrainOutput:
    out_dir: Path
    rollouts: list[RolloutRecord]
    metrics: list[MetricsRecord]
    manifest: CheckpointManifest
    summary: TrainSummary
    seconds: float = 0.0
    """Wall time of the whole `harness train` command (start-up included)."""

    @property
    def checkpoint(self) -> Path:
        return self.out_dir / "checkpoint"


@dataclass(frozen=True)
class StepSeen:
    """Progress of a training run, read from the metric lines the harness has written so far. For display
    only: the lines are untrusted until the run ends and its outputs are validated."""

    done: int
    """Metric lines (optimizer steps) written so far."""
    new: int
    """Lines since the last report."""
    steps: int
    """Steps asked for."""
    seconds: float
    """Since the training command started (its start-up included)."""
    reward: float | None = None
    """The last line's `reward_mean`, when it is a finite number."""


def _last_reward(data: bytes) -> float | None:
    lines = data.rstrip(b"\n").rsplit(b"\n", 1)
    try:
        value = json.loads(lines[-1][:65536]).get("reward_mean")
    except (ValueError, AttributeError, RecursionError):
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


class _StepWatcher:
    """Reports the metric lines the harness has written so far (progress for long runs), and at the end
    the steps it wrote too fast to be seen (from the validated metrics)."""

    def __init__(self, path: Path, steps: int, on_step: Callable[[StepSeen], None] | None) -> None:
        self.path, self.steps, self.on_step = path, steps, on_step
        self.seen = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def report(self, done: int, reward: float | None) -> None:
        done = min(done, self.steps)  # lines past the steps asked for are the audit's to refuse, not progress
        with self.lock:
            if self.on_step is None or done <= self.seen:
                return
            seen = StepSeen(done=done, new=done - self.seen, steps=self.steps,
                            seconds=time.monotonic() - self.started, reward=reward)
            self.seen = done
        self.on_step(seen)

    @contextmanager
    def watching(self) -> Iterator[None]:
        if self.on_step is None:
            yield
            return
        stop = threading.Event()

        def poll() -> None:
            while not stop.wait(0.5):
                try:
                    data = read_bytes(self.path, limit=64 << 20)
                except ContractError:
                    continue  # not written yet, or not a regular file (which the audit after the run reports)
                self.report(data.count(b"\n"), _last_reward(data))

        t = threading.Thread(target=poll, daemon=True)
        t.start()
        try:
            yield
        finally:
            stop.set()
            t.join()


def _failure(result: RunResult) -> str:
    """Why a harness command failed; over its disk quota, which directory, and the setting that raises it."""
    if result.disk_quota_exceeded:
        return (f"went over its disk quota and was stopped: {result.disk_quota_detail}; write less, or raise the "
                "quota (the `sandbox.disk_mb` setting)")
    return result.describe_failure()


def _pytest_reason(result: RunResult) -> str:
    """pytest's own error lines ('E   ...') first, then the summary: the cause, not just 'collection failed'."""
    if result.disk_quota_exceeded:
        return _failure(result)
    lines = (result.stdout + "\n" + result.stderr).splitlines()
    errors = [ln.strip() for ln in lines if ln.startswith("E   ")][:8]
    head = result.describe_failure(tail_lines=6)
    return head + ("\nerrors:\n" + "\n".join(errors) if errors else "")


class HarnessRunner:
    """One sandbox session on one exported harness commit."""

    def __init__(
        self,
        sandbox: Sandbox,
        workdir: Path,
        *,
        commit: str,
        readable: Sequence[Path] = (),
        writable: Sequence[Path] = (),
        limits: Limits = Limits(),
        domain: object = None,
    ) -> None:
        """`domain`: the run's domain, when its tasks need a service while the harness trains or replays on them
        (its `train_environment()`: SWE instances in their own images get an episode server)."""
        for w in writable:
            w.mkdir(parents=True, exist_ok=True)
        self._services = contextlib.ExitStack()
        hook = getattr(domain, "train_environment", None)
        service_dirs, self.service_env = self._services.enter_context(hook()) if hook else ([], {})
        mounts = [Mount(p.resolve()) for p in [*readable, *service_dirs]]
        mounts += [Mount(p.resolve(), read_only=False) for p in writable]
        share = share_file()  # a worker's share of the cores, which `harness train` may follow (thread_share.py)
        if share is not None and share.parent.is_dir():
            mounts.append(Mount(share.parent.resolve()))
            self.service_env = {**self.service_env, THREADS_FILE_ENV: str(share.resolve())}
        self.writable = [p.resolve() for p in writable]
        self.workdir = workdir.resolve()
        self.commit = commit
        try:
            self.session: Session = sandbox.open(workdir.resolve(), mounts=mounts, limits=limits)
        except BaseException:
            self._services.close()
            raise

    def close(self) -> None:
        """Stop the session, then leave its workdir and outputs as plain data: a harness may have left links or a
        `meta_agent` package there, which a user starting `python -m meta_agent` in that folder would run."""
        self.session.close()
        self._services.close()
        for directory in (self.workdir, *self.writable):
            if directory.is_dir():
                scrub_tree(directory)

    def __enter__(self) -> HarnessRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, verb: str, args: Sequence[str], timeout: float | None = None,
             env: Mapping[str, str] | None = None) -> RunResult:
        result = self.session.run(
            [sys.executable, "-m", "harness", verb, *args],
            timeout=timeout,
            env={**self.service_env, **(env or {}), "HARNESS_COMMIT": self.commit},
        )
        if not result.ok:
            raise HarnessError(verb, _failure(result))
        self._audit(verb)
        return result

    def _audit(self, verb: str) -> None:
        """After a command (nothing of it runs any more), its writable dirs must hold plain data only."""
        for directory in self.writable:
            try:
                audit_tree(directory)
            except ContractError as e:
                raise HarnessError(verb, str(e)) from e

    def selftest(self, timeout: float = 600) -> RunResult:
        result = self.session.run([sys.executable, "-m", "harness", "selftest"], timeout=timeout,
                                  env={"HARNESS_COMMIT": self.commit})
        if not result.ok:
            raise HarnessError("selftest", _pytest_reason(result))
        return result

    def train(
        self,
        *,
        policy: Path,
        steps: int,
        seed: int,
        out: Path,
        tasks: Path,
        history: Path | None = None,
        timeout: float | None = None,
        on_step: Callable[[StepSeen], None] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TrainOutput:
        """`harness train`; `env` adds variables (e.g. a tracker's, see meta_agent.tracking.sandbox_env)."""
        args = ["--policy", str(policy), "--steps", str(steps), "--seed", str(seed), "--out", str(out),
                "--tasks", str(tasks), "--progress"]
        if history is not None:
            args += ["--history", str(history)]
        watcher = _StepWatcher(out / "metrics.jsonl.partial", steps, on_step)
        with watcher.watching():
            result = self._run("train", args, timeout, env)
        try:
            output = TrainOutput(
                out_dir=out,
                rollouts=read_jsonl(out / "rollouts.jsonl", RolloutRecord),
                metrics=read_jsonl(out / "metrics.jsonl", MetricsRecord),
                manifest=read_json(out / "checkpoint" / "manifest.json", CheckpointManifest),
                summary=read_json(out / "train_summary.json", TrainSummary),
                seconds=result.wall_time,
            )
        except ContractError as e:
            raise HarnessError("train", f"invalid output: {e}") from e
        if len(output.metrics) != steps:
            raise HarnessError("train", f"wrote metrics for {len(output.metrics)} steps, {steps} were asked for")
        if not output.rollouts:
            raise HarnessError("train", "wrote no rollouts")
        watcher.report(len(output.metrics), output.metrics[-1].reward_mean)
        return output

    def replay(self, *, rollouts: Path, tasks: Path, out: Path, expected: set[str] | None = None,
               timeout: float | None = None) -> list[ReplayRecord]:
        """Re-scored records, one per input rollout (`expected` = their ids, if the caller has them)."""
        self._run("replay", ["--rollouts", str(rollouts), "--tasks", str(tasks), "--out", str(out)], timeout)
        return self._read("replay", out, ReplayRecord, rollouts, expected)

    def diagnose(
        self, *, rollouts: Path, tasks: Path, out: Path, expected: set[str] | None = None,
        timeout: float | None = None,
    ) -> list[DiagnoseRecord]:
        self._run("diagnose", ["--rollouts", str(rollouts), "--tasks", str(tasks), "--out", str(out)], timeout)
        return self._read("diagnose", out, DiagnoseRecord, rollouts, expected)

    def _read(self, verb: str, out: Path, model: type[R], source: Path, expected: set[str] | None) -> list[R]:
        try:
            records = read_jsonl(out, model)
        except ContractError as e:
            raise HarnessError(verb, f"invalid output: {e}") from e
        if expected is None:
            expected = {r.rollout_id for r in read_jsonl(source, RolloutRecord)}
        got = [r.rollout_id for r in records]
        if len(got) != len(expected) or set(got) != expected:
            raise HarnessError(verb, f"{out} covers {len(set(got))} rollouts, the input has {len(expected)}")
        return records
