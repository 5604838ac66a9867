"""The benchmark's arms for one seed, each a real meta-agent command (or a harness made for one), each skipped
when its saved result exists, so a killed benchmark picks up where it stopped, even on a machine that kept
only the results and the arms' records, not the runs (ARMS_RECORD).

Every arm starts from the same initial policy and is scored on the seed's sealed test split.

From `meta-agent evolve --harness <copy of the reference> --control static` (the proposer under test):
- evolved:           the policy trained under the evolving main;
- reference:         the reference harness with the same steps and completions (the run's control arm).
From `meta-agent evolve --proposer random --control none` on another copy (the same budget and gate):
- random_search:     a search whose proposer draws skills and parameters blind to the report.
From `meta-agent rollout` (one training run each, from the initial policy):
- reference_total:   the reference for the evolve run's total steps (its policy's + its search's);
- retrained:         the evolved run's final harness for the evolved policy's steps (harness quality without
                     the luck of the checkpoint it ended on);
- reference_rollout: the reference the same way (what `retrained` is compared with);
- reference_again:   the same with another training seed: two trainings of one harness, the noise floor;
- blind_bundle:      the reference plus every seed skill whose trigger fires on the reference's first report;
- template:          the template harness (context: how far the reference is above it);
- without-<cand>:    the final harness without one of its top merged changes (leave-one-out).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from bench.efficacy_lib.commands import run_meta_agent
from bench.efficacy_lib.compute import Compute, EvolveCompute, of_evolve, of_training
from bench.efficacy_lib.harnesses import Bundle, Change, bundle_harness, copy_harness, merged_changes, without_change
from bench.efficacy_lib.reference import make_reference_harness
from bench.efficacy_lib.splits import secret_file
from meta_agent.errors import UserError
from meta_agent.eventlog import EventLog
from meta_agent.evolve.active_time import run_seconds
from meta_agent.fsutil import atomic_write_text
from meta_agent.gitops import init_harness
from meta_agent.journal import CandidateCreated, GenerationDone, Merged, RunStarted
from meta_agent.journal_keys import RUN_START
from meta_agent.sealed import SECRET_FILE

FIXED_ARMS = ("evolved", "reference", "random_search", "reference_total", "retrained", "reference_rollout",
              "reference_again", "blind_bundle", "template")
"""Every seed's arms; the leave-one-out arms (`without-<cand>`) depend on what the search merged."""
ARMS_RECORD = "arms.json"
"""Each finished arm's record (wall seconds, compute, and what the evolve run found), written as soon as the
arm finishes. bench/results keeps it with the per-task results but not the runs (.gitignore), so a benchmark
killed in a later arm, on a machine that kept only the tracked files, still finishes the seed: without it a
saved result whose run is gone cannot have its compute counted, and the whole seed had to be re-run."""
DERIVED = ("retrained", "blind_bundle", "reference_total")
"""Arms made from the evolve run (its final harness, its first report, its search's compute): an evolve run
started over makes them stale, with the leave-one-out arms."""
RECORDS_VERSION = 2
AGAIN_SEED = 1000
"""reference_again trains with the seed plus this: another draw of the training randomness."""


def without_arm(cand_id: str) -> str:
    return "without-" + re.sub(r"[^A-Za-z0-9_.-]", "_", cand_id)


class SeedRun(BaseModel):
    """What one seed's arms cost and what its search found; the scores are read from results/<arm>.json."""

    seed: int
    compute: dict[str, Compute]
    """Policy-training compute behind each arm's policy."""
    search: dict[str, Compute]
    """What each evolve run (evolved, random_search) spent besides its policy: backtests and noise reruns."""
    wall_s: dict[str, float]
    evolve_time: dict[str, float] = Field(default_factory=dict)
    """Where the evolve run's generations spent their time (seconds): train, eval, proposer, wall."""
    merged: list[str] = Field(default_factory=list)
    """Titles of the candidates the evolve run merged into main, in merge order."""
    random_merged: list[str] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    """The evolve run's merged changes: gate delta, config or code, what each touched."""
    left_out: list[str] = Field(default_factory=list)
    """The arms `without-<cand>` of the changes that were left out, in order of gate delta."""
    not_left_out: dict[str, str] = Field(default_factory=dict)
    """Top changes whose removal was impossible (later ones overlap them), with the reason."""
    bundle: Bundle | None = None
    settings: dict[str, Any] | None = None
    """The benchmark settings (its evolve.yaml) the seed ran with: a report covers only seeds whose settings
    match (efficacy/finished.py)."""

    def arms(self) -> tuple[str, ...]:
        return (*FIXED_ARMS, *self.left_out)


class ArmRecord(BaseModel):
    """A finished `rollout` arm: what it cost."""

    wall_s: float
    compute: Compute


class EvolveRecord(BaseModel):
    """A finished evolve arm: what it cost and what its run found, read from the run before it may be lost."""

    wall_s: float
    compute: EvolveCompute
    time: dict[str, float]
    """Where its generations spent their time (generation_time)."""
    merged: list[str]


class ArmRecords(BaseModel):
    """ARMS_RECORD: one entry per finished arm, and what was made for the arms that follow."""

    version: int = 1
    """2: this benchmark (evolution from the reference); 1 (absent): the template-start benchmark, whose arms
    have other meanings (its `reference.json` is not the evolve run's control)."""
    settings: dict[str, Any] | None = None
    """The benchmark settings the seed runs with (its evolve.yaml): what says, once the evolve run is gone, that
    a later invocation with other settings must not finish this seed (efficacy/finished.py)."""
    evolve: EvolveRecord | None = None
    random: EvolveRecord | None = None
    changes: list[Change] | None = None
    left_out: list[str] | None = None
    not_left_out: dict[str, str] = Field(default_factory=dict)
    bundle: Bundle | None = None
    rollouts: dict[str, ArmRecord] = Field(default_factory=dict)


def saved_run(seed_dir: Path) -> SeedRun | None:
    """The seed's record (wall.json) when it has one this benchmark can read: None when it has none, or was
    finished by the earlier benchmark (template start, four arms), whose record this one cannot report."""
    wall = seed_dir / "wall.json"
    try:
        return SeedRun.model_validate_json(wall.read_text()) if wall.is_file() else None
    except ValueError:
        return None


def finished_run(seed_dir: Path) -> SeedRun | None:
    """The seed's record when every one of its arms has its result saved."""
    run = saved_run(seed_dir)
    return run if run is not None and saved(seed_dir, run.arms()) else None


def sealed_of(run_dir: Path) -> str | None:
    """The fingerprint of the secret an evolve run drew its splits from (its journal's start)."""
    started = EventLog(run_dir).done(RUN_START, RunStarted)
    return started.sealed if started else None


def saved(seed_dir: Path, arms: tuple[str, ...]) -> bool:
    """These arms of the seed have their per-task results saved; a deleted result asks for its arm again."""
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


class SeedArms:
    def __init__(self, out: Path, evolve_config: Path, run_config: Path, seed: int, domain: str,
                 test_limit: int | None, *, leave_one_out: int = 2, sandbox: str = "auto",
                 log: Callable[[str], None] = print) -> None:
        """`evolve_config` is an evolve --config file; `run_config` the subset `rollout` and `eval` accept
        (domain, policy, sandbox, the domain's section), so every arm sees the same tasks and policy."""
        self.dir = out / f"seed-{seed}"
        self.results = self.dir / "results"
        self.evolve_config, self.config = evolve_config, run_config
        self.seed, self.domain, self.test_limit, self.log = seed, domain, test_limit, log
        self.leave_one_out, self.sandbox = leave_one_out, sandbox
        self.results.mkdir(parents=True, exist_ok=True)

    def _meta_agent(self, *args: str, data: Path | None = None) -> float:
        self.log(f"seed {self.seed}: meta-agent {' '.join(args)}")
        # Each seed has its own user data (skills library and evidence): what one seed's search learned must
        # not steer another's, nor your own library steer the benchmark.
        return run_meta_agent(*args, data=data or self.dir / "data", who=f"seed {self.seed}")

    def run(self) -> SeedRun:
        finished = finished_run(self.dir)
        if finished is not None:  # every arm done (perhaps in a clone that kept only the results and records)
            return finished
        record = self.dir / ARMS_RECORD
        records = ArmRecords.model_validate_json(record.read_text()) if record.is_file() else \
            ArmRecords(version=RECORDS_VERSION)
        if records.version != RECORDS_VERSION:
            raise UserError(f"{self.dir} was started by the template-start benchmark, whose arms mean other things: "
                            f"use another --out")
        records.settings = records.settings or yaml.safe_load(self.evolve_config.read_text())
        reference = self._reference_harness()
        evolve = records.evolve if records.evolve and saved(self.dir, ("evolved", "reference")) else \
            self._evolve(records)
        steps = evolve.compute.evolved.steps
        if records.changes is None:
            records.changes = merged_changes(self.dir / "evolve", self.dir / "evolve-harness")
            self._keep(records)
        final = self.dir / "evolve-harness"  # its main is the evolved harness
        if not (final / ".git").is_dir() and not saved(self.dir, ("retrained", *(records.left_out or ()))):
            raise UserError(f"seed {self.seed}: the evolved harness ({final}) is gone, and the retrained and "
                            f"leave-one-out arms need it: delete {self.results / 'evolved.json'} to run the evolve "
                            f"arm again")
        self._rollout("reference_rollout", reference, steps, records)
        self._rollout("retrained", final, steps, records)
        self._rollout("reference_again", reference, steps, records, seed=self.seed + AGAIN_SEED)
        self._rollout("blind_bundle", lambda: self._bundle(records), steps, records)
        self._rollout("template", self._template_harness, steps, records)
        for change in self._top_changes(records):
            arm = without_arm(change.cand_id)
            harness = self.dir / f"{arm}-harness"
            if not (arm in records.rollouts and saved(self.dir, (arm,))) and \
                    (reason := without_change(final, harness, change)) is not None:
                records.not_left_out[change.cand_id] = reason
                records.left_out = [a for a in records.left_out or [] if a != arm]
                self._keep(records)
                continue
            self._rollout(arm, harness, steps, records)
        random = records.random if records.random and saved(self.dir, ("random_search",)) else \
            self._random(records)
        self._rollout("reference_total", reference, steps + evolve.compute.search.steps, records)
        r = records.rollouts
        run = SeedRun(
            seed=self.seed, settings=records.settings, evolve_time=evolve.time, merged=evolve.merged,
            random_merged=random.merged, changes=records.changes, left_out=records.left_out or [],
            not_left_out=records.not_left_out, bundle=records.bundle,
            search={"evolved": evolve.compute.search, "random_search": random.compute.search},
            wall_s={"evolve": evolve.wall_s, "random_search": random.wall_s, **{a: r[a].wall_s for a in r}},
            compute={"evolved": evolve.compute.evolved, "reference": evolve.compute.static,
                     "random_search": random.compute.evolved, **{a: r[a].compute for a in r}})
        atomic_write_text(self.dir / "wall.json", run.model_dump_json(indent=2))
        return run

    def _keep(self, records: ArmRecords) -> None:
        """Save the finished arms' records now (see ARMS_RECORD)."""
        atomic_write_text(self.dir / ARMS_RECORD, records.model_dump_json(indent=2))

    def _counted(self, result: Path, run: Path) -> None:
        """A saved result whose run is gone and that has no record cannot have its compute counted; say so
        instead of counting 0."""
        if result.is_file() and not run.exists():
            raise UserError(f"{self.dir}: {result.name} is saved but neither its record ({ARMS_RECORD}) nor the "
                            f"run that made it ({run}), so its compute cannot be counted: delete {result} to run "
                            f"that arm again")

    def _evolve_run(self, run_dir: Path, harness: Path, data: Path, *extra: str) -> tuple[EvolveRecord, bool]:
        """An evolve run from `harness` (a private copy of the reference), resumed if it was started; and
        whether it had to start afresh."""
        fresh = not (run_dir / "events.jsonl").is_file()
        if not fresh:
            self._meta_agent("resume", str(run_dir), data=data)
        else:
            # The run's user skills library starts empty. What is there already was learned by an attempt
            # whose run is gone (its machine lost): kept, it would steer this run with evidence that this
            # seed's report cannot show (bench/results keeps the library, not the runs).
            shutil.rmtree(data / "skills", ignore_errors=True)
            shutil.rmtree(harness, ignore_errors=True)  # a lost attempt's merges must not be the start
            copy_harness(self._reference_harness(), harness)
            self._meta_agent("evolve", "--config", str(self.evolve_config), "--seed", str(self.seed),
                             "--harness", str(harness), "--run-dir", str(run_dir), *extra, data=data)
        # From the run's journal, not this process's clock: a benchmark killed and resumed (perhaps more
        # than once) measured only its last part, and the downtime between the parts is no one's work.
        return EvolveRecord(wall_s=run_seconds(EventLog(run_dir)), compute=of_evolve(run_dir),
                            time=generation_time(run_dir), merged=merged_titles(run_dir)), fresh

    def _evolve(self, records: ArmRecords) -> EvolveRecord:
        run_dir = self.dir / "evolve"
        evolved = self.results / "evolved.json"
        self._counted(evolved, run_dir / "events.jsonl")
        records.evolve, fresh = self._evolve_run(run_dir, self.dir / "evolve-harness", self.dir / "data",
                                                 "--control", "static")
        if fresh:  # a new search: the arms made from the last one's harness, report or compute are stale
            for arm in DERIVED + tuple(records.left_out or ()):
                records.rollouts.pop(arm, None)
                (self.results / f"{arm}.json").unlink(missing_ok=True)
                shutil.rmtree(self.dir / arm, ignore_errors=True)
            records.bundle, records.not_left_out = None, {}
        shutil.copyfile(run_dir / "final" / "evolved-test.json", evolved)
        shutil.copyfile(run_dir / "final" / "static-test.json", self.results / "reference.json")
        # Every candidate with its verdict and reason, kept with the results (the run is not).
        shutil.copyfile(run_dir / "summary.md", self.dir / "evolve-summary.md")
        records.changes = records.left_out = None  # what it merged is read again from this run
        self._keep(records)
        return records.evolve

    def _random(self, records: ArmRecords) -> EvolveRecord:
        run_dir, data = self.dir / "random", self.dir / "data-random"
        result = self.results / "random_search.json"
        self._counted(result, run_dir / "events.jsonl")
        # Its own skills library (the first run's evidence must not reach it), the seed's sealed splits.
        secret = data / SECRET_FILE
        if not secret.is_file():
            data.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(secret_file(self.dir), secret)
        records.random, _ = self._evolve_run(run_dir, self.dir / "random-harness", data,
                                             "--proposer", "random", "--control", "none")
        theirs, ours = (sealed_of(d) for d in (run_dir, self.dir / "evolve"))
        if theirs != ours:  # task ids do not reveal the secret, so scores on other tasks would look paired
            raise UserError(f"seed {self.seed}: the random-search run drew its splits from another secret "
                            f"({theirs}) than the evolve run ({ours}); delete {run_dir} and {data} to run it again")
        shutil.copyfile(run_dir / "final" / "evolved-test.json", result)
        shutil.copyfile(run_dir / "summary.md", self.dir / "random-summary.md")
        self._keep(records)
        return records.random

    def _reference_harness(self) -> Path:
        harness = self.dir / "reference-harness"
        if not (harness / ".git").is_dir():
            make_reference_harness(harness, self.domain)
        return harness

    def _template_harness(self) -> Path:
        harness = self.dir / "template-harness"
        if not (harness / ".git").is_dir():
            init_harness(harness, self.domain)
        return harness

    def _bundle(self, records: ArmRecords) -> Path:
        harness = self.dir / "bundle-harness"
        report = self.dir / "evolve" / "gen-000" / "main" / "report.json"
        if not report.is_file():
            raise UserError(f"seed {self.seed}: the blind bundle is chosen from the evolve run's first report "
                            f"({report}), which is gone: delete {self.results / 'evolved.json'} to run the evolve "
                            f"arm again")
        records.bundle = bundle_harness(self._reference_harness(), harness, report, self.sandbox,
                                        self.dir / "bundle-work")
        self._keep(records)
        return harness

    def _top_changes(self, records: ArmRecords) -> list[Change]:
        """The changes of the leave-one-out arms: the top `leave_one_out` merged ones by gate delta."""
        changes = records.changes or []
        if records.left_out is None:
            top = sorted(changes, key=lambda c: -(c.delta or 0.0))[:self.leave_one_out]
            records.left_out = [without_arm(c.cand_id) for c in top]
            self._keep(records)
        return [c for arm in records.left_out for c in changes if without_arm(c.cand_id) == arm]

    def _rollout(self, arm: str, harness: Path | Callable[[], Path], steps: int, records: ArmRecords,
                 seed: int | None = None) -> ArmRecord:
        """`rollout` under `harness` (or the harness the callable makes, only when the arm runs) for `steps`
        from the initial policy, then `eval` on the test split."""
        run_dir, result = self.dir / arm, self.results / f"{arm}.json"
        if arm in records.rollouts and saved(self.dir, (arm,)):
            return records.rollouts[arm]
        self._counted(result, run_dir / "train")
        seconds = 0.0
        if not (run_dir / "train" / "report.json").is_file():
            if run_dir.exists():
                shutil.rmtree(run_dir)  # a killed training starts over, as `rollout` itself would
            path = harness if isinstance(harness, Path) else harness()
            seconds += self._meta_agent("rollout", "--config", str(self.config), "--steps", str(steps),
                                        "--seed", str(self.seed if seed is None else seed), "--run-dir",
                                        str(run_dir), "--harness", str(path))
        limit = ["--limit", str(self.test_limit)] if self.test_limit else []
        seconds += self._meta_agent("eval", "--config", str(self.config), "--domain", self.domain,
                                    "--policy", str(run_dir / "train" / "checkpoint"), "--split", "test",
                                    *limit, "--out", str(result), "--show", "0")
        records.rollouts[arm] = ArmRecord(wall_s=seconds, compute=of_training(run_dir / "train"))
        self._keep(records)
        return records.rollouts[arm]
