"""The benchmark's arms for one seed, each a real meta-agent command, each skipped when its saved
result exists (so a killed benchmark picks up where it stopped).

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

from meta_agent.efficacy.compute import Compute, EvolveCompute, of_evolve, of_training
from meta_agent.efficacy.reference import make_reference_harness
from meta_agent.errors import UserError
from meta_agent.eventlog import EventLog
from meta_agent.evolve.active_time import run_seconds
from meta_agent.fsutil import atomic_write_text
from meta_agent.journal import CandidateCreated, GenerationDone, Merged
from meta_agent.sealed import SECRET_ENV

ARMS = ("evolved", "static", "reference", "static_total")
META_AGENT = (sys.executable, "-m", "meta_agent")
"""How the arms run meta-agent: in a fresh interpreter, like a user's shell would."""
ARM_SECONDS = "arm-seconds.json"
"""Each finished arm's wall seconds, written as soon as it finishes: a benchmark killed in a later arm
keeps them (wall.json is written only when the whole seed is done)."""


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


def finished(seed_dir: Path) -> bool:
    """Every arm of the seed has its per-task results saved."""
    return all((seed_dir / "results" / f"{arm}.json").is_file() for arm in ARMS)


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
        timing_file, arm_seconds = self.dir / "wall.json", self.dir / ARM_SECONDS
        saved = SeedRun.model_validate_json(timing_file.read_text()) if timing_file.is_file() else None
        if saved is not None and finished(self.dir) and not self._runs_kept():
            # bench/results keeps a finished seed's per-task results and this record, not its runs and
            # checkpoints (.gitignore): a clone that adds seeds must not recount this one from runs it lacks.
            return saved
        wall: dict[str, float] = saved.wall_s if saved is not None else {}
        if arm_seconds.is_file():
            wall |= {k: float(v) for k, v in json.loads(arm_seconds.read_text()).items()}
        evolve = self._evolve(wall)
        steps = evolve.evolved.steps
        reference = self._rollout("reference", self._reference_harness(), steps, wall)
        static_total = self._rollout("static_total", None, steps + evolve.search.steps, wall)
        run = SeedRun(seed=self.seed, search=evolve.search, wall_s=wall,
                      settings=yaml.safe_load(self.evolve_config.read_text()),
                      evolve_time=generation_time(self.dir / "evolve"), merged=merged_titles(self.dir / "evolve"),
                      compute={"evolved": evolve.evolved, "static": evolve.static, "reference": reference,
                               "static_total": static_total})
        atomic_write_text(timing_file, run.model_dump_json(indent=2))
        return run

    def _runs_kept(self) -> bool:
        return (self.dir / "evolve" / "events.jsonl").is_file() and all(
            (self.dir / arm / "train").is_dir() for arm in ("reference", "static_total"))

    def _counted(self, result: Path, run: Path) -> None:
        """A saved result whose run is gone cannot have its compute counted; say so instead of counting 0."""
        if result.is_file() and not run.exists():
            raise UserError(f"{self.dir}: {result.name} is saved but not the run that made it ({run}), so its "
                            f"compute cannot be counted: delete {result} to run that arm again")

    def _evolve(self, wall: dict[str, float]) -> EvolveCompute:
        run_dir = self.dir / "evolve"
        evolved, static = self.results / "evolved.json", self.results / "static.json"
        self._counted(evolved, run_dir / "events.jsonl")
        if not (evolved.is_file() and static.is_file()):
            if (run_dir / "events.jsonl").is_file():
                self._meta_agent("resume", str(run_dir))
            else:
                self._meta_agent("evolve", "--config", str(self.evolve_config), "--seed", str(self.seed),
                                 "--control", "static", "--run-dir", str(run_dir))
            # From the run's journal, not this process's clock: a benchmark killed and resumed (perhaps more
            # than once) measured only its last part, and the downtime between the parts is no one's work.
            wall["evolve"] = run_seconds(EventLog(run_dir))
            shutil.copyfile(run_dir / "final" / "evolved-test.json", evolved)
            shutil.copyfile(run_dir / "final" / "static-test.json", static)
            self._keep(wall)
        return of_evolve(run_dir)

    def _keep(self, wall: dict[str, float]) -> None:
        """Save the finished arms' seconds now (see ARM_SECONDS)."""
        atomic_write_text(self.dir / ARM_SECONDS, json.dumps(wall, indent=2))

    def _reference_harness(self) -> Path:
        harness = self.dir / "reference-harness"
        if not (harness / ".git").is_dir():
            make_reference_harness(harness, self.domain)
        return harness

    def _rollout(self, arm: str, harness: Path | None, steps: int, wall: dict[str, float]) -> Compute:
        run_dir, result = self.dir / arm, self.results / f"{arm}.json"
        self._counted(result, run_dir / "train")
        if not result.is_file():
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
            wall[arm] = seconds
            self._keep(wall)
        return of_training(run_dir / "train")
