"""The benchmark's arms for one seed, each a real meta-agent command, each skipped when its saved
result exists (so a killed benchmark picks up where it stopped, even on a machine that kept only the
results and the arms' records, not the runs: ARMS_RECORD).

- evolve:   `meta-agent evolve --control static`: the evolved policy, and the static harness trained
            with the same steps and completions (the run's own control arm); both scored on the test split.
- reference: the reference harness (efficacy/reference.py), `rollout` for the evolved policy's steps.
- static_total: the starting harness, `rollout` for the evolved run's total steps (its own + the search's).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from bench.efficacy_lib.compute import Compute, EvolveCompute, of_evolve, of_training
from bench.efficacy_lib.reference import make_reference_harness
from meta_agent.errors import UserError
from meta_agent.eventlog import EventLog
from meta_agent.evolve.active_time import run_seconds
from meta_agent.fsutil import atomic_write_text
from meta_agent.journal import CandidateCreated, GenerationDone, Merged
from meta_agent.sealed import SECRET_ENV

ARMS = ("evolved", "static", "reference", "static_total")
META_AGENT = (sys.executable, "-m", "meta_agent")
"""How the arms run meta-agent: in a fresh interpreter, like a user's shell would."""
ARMS_RECORD = "arms.json"
"""Each finished arm's record (wall seconds, compute, and what the evolve run found), written as soon as the
arm finishes. bench/results keeps it with the per-task results but not the runs (.gitignore), so a benchmark
killed in a later arm, on a machine that kept only the tracked files, still finishes the seed: without it a
saved result whose run is gone cannot have its compute counted, and the whole seed had to be re-run."""
LEGACY_SECONDS = "arm-seconds.json"
"""What drivers before ARMS_RECORD kept: the finished arms' wall seconds only."""


class SeedRun(BaseModel):
    """What one seed's arms cost; the scores themselves are read from results/<arm>.json."""

    seed: int
    compute: dict[str, Compute]
    """Policy-training compute behind each arm's policy."""
    search: Compute
    """What the evolve run spent besides its policy: candidate backtests and noise reruns."""
    wall_s: dict[str, float]
    evolve_time: dict[str, float] = Field(default_factory=dict)
    """Where the evolve run's generations spent their time (seconds): train, eval, proposer, wall."""
    merged: list[str] = Field(default_factory=list)
    """Titles of the candidates the evolve run merged into main, in merge order."""
    settings: dict[str, Any] | None = None
    """The benchmark settings (its evolve.yaml) the seed ran with; None in records written before they were
    kept. A report covers only seeds whose settings match (efficacy/finished.py)."""


class ArmRecord(BaseModel):
    """A finished `rollout` arm (reference, static_total): what it cost."""

    wall_s: float
    compute: Compute


class EvolveRecord(BaseModel):
    """The finished evolve arm: what it cost and what its run found, read from the run before it may be lost."""

    wall_s: float
    compute: EvolveCompute
    time: dict[str, float]
    """Where its generations spent their time (generation_time)."""
    merged: list[str]


class ArmRecords(BaseModel):
    """ARMS_RECORD: one entry per finished arm."""

    settings: dict[str, Any] | None = None
    """The benchmark settings the seed runs with (its evolve.yaml): what says, once the evolve run is gone, that
    a later invocation with other settings must not finish this seed (efficacy/finished.py)."""
    evolve: EvolveRecord | None = None
    rollouts: dict[str, ArmRecord] = Field(default_factory=dict)


def saved(seed_dir: Path, arms: tuple[str, ...] = ARMS) -> bool:
    """These arms of the seed (default: every arm) have their per-task results saved; a deleted result asks for
    its arm again, record or not."""
    return all((seed_dir / "results" / f"{arm}.json").is_file() for arm in arms)


def merged_titles(run_dir: Path) -> list[str]:
    """What the search found: the merged candidates' titles, from the evolve run's journal. A candidate built
    on an archived one (`archive_parents`) merged both changes, and its title says so."""
    log = EventLog(run_dir)
    created = {c.cand_id: c for c in log.of_type(CandidateCreated)}

    def title(cand_id: str, depth: int = 0) -> str:
        c = created.get(cand_id)
        if c is None:
            return cand_id
        if c.parent is None or depth == 8:
            return c.title
        return f"{c.title}, on {c.parent} ({title(c.parent, depth + 1)})"

    return [title(m.cand_id) for m in log.of_type(Merged)]


def generation_time(run_dir: Path) -> dict[str, float]:
    """The evolve run's journaled time per phase, summed over its generations (the final static arm and
    test evaluations are the rest of its wall time)."""
    log = EventLog(run_dir)
    total: dict[str, float] = {}
    g = 0
    while (done := log.done(f"g{g}/done", GenerationDone)) is not None:
        for phase in ("wall", "train", "eval", "proposer"):
            total[phase] = total.get(phase, 0.0) + float(done.time.get(phase, 0.0))
        g += 1
    return total


def run_meta_agent(*args: str, data: Path, who: str) -> float:
    """`meta-agent ARGS` in a subprocess with its own user data dir (skills, sealed splits); its wall seconds.
    A failure is a UserError with the command and the tail of its output.

    The sealed splits come from the secret in `data`, never from `META_AGENT_SEALED_SECRET`: a benchmark
    resumed in a shell where that variable is set (or set differently) would otherwise score its later
    arms on other selection and test tasks than its earlier ones, and every paired delta would be void.

    The child never outlives this call: whatever ends it early (Ctrl-C, or SIGTERM, which `stop_on_sigterm`
    turns into SystemExit) stops the child too, so a scheduler that signals only the benchmark's own pid
    leaves no orphaned run holding the harness repo's lock and the CPU. The run's journal makes it resumable."""
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != SECRET_ENV} | {"META_AGENT_DATA": str(data)}
    with subprocess.Popen([*META_AGENT, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            stdout, stderr = proc.communicate()
        except BaseException:
            stop_child(proc)
            raise
    if proc.returncode != 0:
        raise UserError(f"{who}: `meta-agent {' '.join(args)}` failed (exit {proc.returncode}):\n"
                        f"{(stderr or stdout)[-3000:]}")
    return time.monotonic() - started


def stop_child(proc: subprocess.Popen[str], grace_s: float = 30.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after `grace_s` (its sandboxes die with it)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C does (SystemExit 143), so `run_meta_agent` stops its child first."""
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


class SeedArms:
    def __init__(self, out: Path, evolve_config: Path, run_config: Path, seed: int, domain: str,
                 test_limit: int | None, log: Callable[[str], None] = print) -> None:
        """`evolve_config` is an evolve --config file; `run_config` the subset `rollout` and `eval` accept
        (domain, policy, sandbox, the domain's section), so every arm sees the same tasks and policy."""
        self.dir = out / f"seed-{seed}"
        self.results = self.dir / "results"
        self.evolve_config, self.config = evolve_config, run_config
        self.seed, self.domain, self.test_limit, self.log = seed, domain, test_limit, log
        self.results.mkdir(parents=True, exist_ok=True)

    def _meta_agent(self, *args: str) -> float:
        self.log(f"seed {self.seed}: meta-agent {' '.join(args)}")
        # Each seed has its own user data (skills library and evidence): what one seed's search learned must
        # not steer another's, nor your own library steer the benchmark.
        return run_meta_agent(*args, data=self.dir / "data", who=f"seed {self.seed}")

    def run(self) -> SeedRun:
        timing_file = self.dir / "wall.json"
        record = self.dir / ARMS_RECORD
        records = ArmRecords.model_validate_json(record.read_text()) if record.is_file() else ArmRecords()
        if timing_file.is_file() and saved(self.dir) and not record.is_file():
            # Finished by a driver older than ARMS_RECORD: its wall.json is the whole record.
            return SeedRun.model_validate_json(timing_file.read_text())
        records.settings = records.settings or yaml.safe_load(self.evolve_config.read_text())
        evolve = records.evolve if records.evolve and saved(self.dir, ("evolved", "static")) else self._evolve(records)
        steps = evolve.compute.evolved.steps
        reference = self._rollout("reference", self._reference_harness(), steps, records)
        static_total = self._rollout("static_total", None, steps + evolve.compute.search.steps, records)
        wall = {"evolve": evolve.wall_s, "reference": reference.wall_s, "static_total": static_total.wall_s}
        run = SeedRun(seed=self.seed, search=evolve.compute.search, wall_s=wall,
                      settings=records.settings, evolve_time=evolve.time,
                      merged=evolve.merged,
                      compute={"evolved": evolve.compute.evolved, "static": evolve.compute.static,
                               "reference": reference.compute, "static_total": static_total.compute})
        atomic_write_text(timing_file, run.model_dump_json(indent=2))
        return run

    def _keep(self, records: ArmRecords) -> None:
        """Save the finished arms' records now (see ARMS_RECORD)."""
        atomic_write_text(self.dir / ARMS_RECORD, records.model_dump_json(indent=2))

    def _legacy_seconds(self, arm: str) -> float | None:
        path = self.dir / LEGACY_SECONDS
        return json.loads(path.read_text()).get(arm) if path.is_file() else None

    def _counted(self, result: Path, run: Path) -> None:
        """A saved result whose run is gone and that has no record cannot have its compute counted; say so
        instead of counting 0."""
        if result.is_file() and not run.exists():
            raise UserError(f"{self.dir}: {result.name} is saved but neither its record ({ARMS_RECORD}) nor the "
                            f"run that made it ({run}), so its compute cannot be counted: delete {result} to run "
                            f"that arm again")

    def _evolve(self, records: ArmRecords) -> EvolveRecord:
        run_dir = self.dir / "evolve"
        evolved, static = self.results / "evolved.json", self.results / "static.json"
        self._counted(evolved, run_dir / "events.jsonl")
        if not (evolved.is_file() and static.is_file()):
            if (run_dir / "events.jsonl").is_file():
                self._meta_agent("resume", str(run_dir))
            else:
                # The seed's user skills library starts empty. What is there already was learned by an attempt
                # whose run is gone (its machine lost): kept, it would steer this run with evidence that this
                # seed's report cannot show (bench/results keeps the library, not the runs).
                shutil.rmtree(self.dir / "data" / "skills", ignore_errors=True)
                self._meta_agent("evolve", "--config", str(self.evolve_config), "--seed", str(self.seed),
                                 "--control", "static", "--run-dir", str(run_dir))
            shutil.copyfile(run_dir / "final" / "evolved-test.json", evolved)
            shutil.copyfile(run_dir / "final" / "static-test.json", static)
            # Every candidate with its verdict and reason, kept with the results (the run is not).
            shutil.copyfile(run_dir / "summary.md", self.dir / "evolve-summary.md")
        # From the run's journal, not this process's clock: a benchmark killed and resumed (perhaps more
        # than once) measured only its last part, and the downtime between the parts is no one's work.
        records.evolve = EvolveRecord(wall_s=run_seconds(EventLog(run_dir)), compute=of_evolve(run_dir),
                                      time=generation_time(run_dir), merged=merged_titles(run_dir))
        self._keep(records)
        return records.evolve

    def _reference_harness(self) -> Path:
        harness = self.dir / "reference-harness"
        if not (harness / ".git").is_dir():
            make_reference_harness(harness, self.domain)
        return harness

    def _rollout(self, arm: str, harness: Path | None, steps: int, records: ArmRecords) -> ArmRecord:
        run_dir, result = self.dir / arm, self.results / f"{arm}.json"
        if arm in records.rollouts and saved(self.dir, (arm,)):
            return records.rollouts[arm]
        self._counted(result, run_dir / "train")
        if result.is_file():  # finished under a driver older than ARMS_RECORD, its run still here
            seconds = self._legacy_seconds(arm) or 0.0
        else:
            seconds = 0.0
            if not (run_dir / "train" / "report.json").is_file():
                if run_dir.exists():
                    shutil.rmtree(run_dir)  # a killed training starts over, as `rollout` itself would
                args = ["rollout", "--config", str(self.config), "--steps", str(steps), "--seed", str(self.seed),
                        "--run-dir", str(run_dir)]
                seconds += self._meta_agent(*args, *(["--harness", str(harness)] if harness else []))
            limit = ["--limit", str(self.test_limit)] if self.test_limit else []
            seconds += self._meta_agent("eval", "--config", str(self.config), "--domain", self.domain,
                                        "--policy", str(run_dir / "train" / "checkpoint"), "--split", "test",
                                        *limit, "--out", str(result), "--show", "0")
        records.rollouts[arm] = ArmRecord(wall_s=seconds, compute=of_training(run_dir / "train"))
        self._keep(records)
        return records.rollouts[arm]
