"""The benchmark's arms for one seed, each a real meta-agent command (or a harness made for one), each skipped
when its saved result exists, so a killed benchmark picks up where it stopped, even on a machine that kept
only the results and the arms' records, not the runs (ARMS_RECORD).

Every arm starts from the same initial policy and is scored on the seed's sealed test split.

From `meta-agent evolve --harness <copy of the reference> --control static` (the proposer under test):
- evolved:           the policy trained under the evolving main;
- reference:         the reference harness with the same steps and completions (the run's control arm).
From `meta-agent evolve --proposer random-matched --control none` on another copy (the same gate, and the same
`search_steps`, the GRPO steps each search may spend):
- random_search:     a search whose proposer draws skills and parameters blind to the report, as many a
                     generation as the skills proposer would propose (`--proposer random`, every slot, when
                     the proposer under test is an LLM, which fills every slot).
From `meta-agent rollout` (one training run each, from the initial policy):
- reference_total:   the reference for the evolve run's total steps (its policy's + its search's);
- retrained:         the evolved run's final harness for the evolved policy's steps (harness quality without
                     the luck of the checkpoint it ended on); when the search merged nothing, the final
                     harness is the reference's files and this is reference_rollout's job, whose result it takes;
- reference_rollout: the reference the same way (what `retrained` is compared with);
- reference_again:   the same with another training seed: two trainings of one harness, the noise floor;
- blind_bundle:      the reference plus every seed skill whose trigger fires on the reference's first report;
- template:          the template harness (context: how far the reference is above it);
- without-<cand>:    the final harness without one of its top merged changes (leave-one-out); when that leaves
                     the reference's files (the search merged one change), reference_rollout's job and result.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import yaml

from bench.efficacy_lib.commands import run_meta_agent
from bench.efficacy_lib.compute import of_evolve, of_training
from bench.efficacy_lib.evolve_run import generation_time, merged_titles, sealed_of
from bench.efficacy_lib.harnesses import (
    Change,
    bundle_harness,
    copy_harness,
    merged_changes,
    same_files,
    without_change,
)
from bench.efficacy_lib.lanes import ArmQueue, lane_threads, run_lanes
from bench.efficacy_lib.records import (
    ARMS_RECORD,
    RECORDS_VERSION,
    ArmRecord,
    ArmRecords,
    EvolveRecord,
    SeedRun,
    finished_run,
    saved,
    without_arm,
)
from bench.efficacy_lib.reference import make_reference_harness
from bench.efficacy_lib.splits import secret_file
from meta_agent.config import EvolveConfig
from meta_agent.errors import UserError
from meta_agent.eventlog import EventLog
from meta_agent.evolve.active_time import run_seconds
from meta_agent.fsutil import atomic_write_text
from meta_agent.gitops import init_harness
from meta_agent.sealed import SECRET_FILE, make_secret

DERIVED = ("retrained", "blind_bundle", "reference_total")
"""Arms made from the evolve run (its final harness, its first report, its search's compute): an evolve run
started over makes them stale, with the leave-one-out arms."""
AGAIN_SEED = 1000
"""reference_again trains with the seed plus this: another draw of the training randomness."""


class SeedArms:
    def __init__(self, out: Path, evolve_config: Path, run_config: Path, seed: int, domain: str,
                 test_limit: int | None, *, leave_one_out: int = 2, sandbox: str = "auto", lanes: int = 1,
                 log: Callable[[str], None] = print) -> None:
        """`evolve_config` is an evolve --config file; `run_config` the subset `rollout` and `eval` accept
        (domain, policy, sandbox, the domain's section), so every arm sees the same tasks and policy."""
        self.dir = out / f"seed-{seed}"
        self.results = self.dir / "results"
        self.evolve_config, self.config = evolve_config, run_config
        self.seed, self.domain, self.test_limit, self.log = seed, domain, test_limit, log
        self.leave_one_out, self.sandbox, self.lanes = leave_one_out, sandbox, lanes
        self._lock = threading.RLock()  # the lanes share `records` and its file
        self.results.mkdir(parents=True, exist_ok=True)

    def _meta_agent(self, *args: str, data: Path | None = None) -> float:
        self.log(f"seed {self.seed}: meta-agent {' '.join(args)}")
        # Each seed has its own user data (skills library and evidence): what one seed's search learned must
        # not steer another's, nor your own library steer the benchmark.
        return run_meta_agent(*args, data=data or self.dir / "data", who=f"seed {self.seed}",
                              threads=lane_threads())

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
        self._reference_harness()
        make_secret(secret_file(self.dir))  # both lanes' runs draw their splits from it: made before either
        queue = ArmQueue()  # the arms after the searches, for whichever lane is free (lanes.py)
        self._queue_fixed_arms(records, queue)  # ready for the lane whose search ends first
        run_lanes([lambda: self._search_lane(records, queue), lambda: self._random_lane(records, queue)],
                  side_by_side=self.lanes > 1)
        evolve, random = records.evolve, records.random
        assert evolve is not None and random is not None, "both lanes ended without an error"
        r = records.rollouts
        run = SeedRun(
            seed=self.seed, settings=records.settings, evolve_time=evolve.time, merged=evolve.merged,
            random_merged=random.merged, changes=records.changes or [], left_out=records.left_out or [],
            not_left_out=records.not_left_out, bundle=records.bundle, reused=records.reused,
            search={"evolved": evolve.compute.search, "random_search": random.compute.search},
            wall_s={"evolve": evolve.wall_s, "random_search": random.wall_s, **{a: r[a].wall_s for a in r}},
            compute={"evolved": evolve.compute.evolved, "reference": evolve.compute.static,
                     "random_search": random.compute.evolved, **{a: r[a].compute for a in r}})
        atomic_write_text(self.dir / "wall.json", run.model_dump_json(indent=2))
        return run

    def _search_lane(self, records: ArmRecords, queue: ArmQueue) -> None:
        """The evolve arm; then the arms that need its steps, longest first, queued for either lane."""
        try:
            evolve = records.evolve if records.evolve and saved(self.dir, ("evolved", "reference")) else \
                self._evolve(records)
            self._queue_arms(records, queue, evolve)
        finally:
            queue.close()  # also when the evolve arm failed: the other lane must not wait for arms that will not come
        queue.work()

    def _random_lane(self, records: ArmRecords, queue: ArmQueue) -> None:
        """The random-search control, then queued arms; its failure is raised after them."""
        failed: Exception | None = None
        try:
            if not (records.random and saved(self.dir, ("random_search",))):
                self._random(records)
        except Exception as e:  # the evolve lane's arms still get this lane's cores
            failed = e
        queue.work()
        if failed is not None:
            raise failed

    def _planned_steps(self, records: ArmRecords) -> int:
        """The evolved policy's GRPO steps as the settings plan them: generations x train_steps."""
        cfg = EvolveConfig.model_validate(records.settings or {})
        return cfg.generations * cfg.steps

    def _queue_fixed_arms(self, records: ArmRecords, queue: ArmQueue) -> None:
        """The arms that need only the evolved policy's planned steps, not the evolve run: queued before the
        searches, so the lane whose search ends first starts them instead of waiting for the other's."""
        reference, steps = self._reference_harness(), self._planned_steps(records)
        queue.add("reference_rollout", lambda: self._rollout("reference_rollout", reference, steps, records))
        queue.add("reference_again", lambda: self._rollout("reference_again", reference, steps, records,
                                                           seed=self.seed + AGAIN_SEED))
        queue.add("template", lambda: self._rollout("template", self._template_harness, steps, records))

    def _queue_arms(self, records: ArmRecords, queue: ArmQueue, evolve: EvolveRecord) -> None:
        """The arms made from the evolve run: its total steps, its first report, its final harness."""
        steps = evolve.compute.evolved.steps
        if steps != self._planned_steps(records):  # the fixed arms trained the planned steps: equal compute
            raise UserError(f"seed {self.seed}: the evolved policy trained {steps} GRPO steps, not the "
                            f"{self._planned_steps(records)} its settings plan (generations x train_steps), so the "
                            f"reference_rollout, reference_again and template arms did not train as long; see "
                            f"{self.dir / 'evolve'}")
        if records.changes is None:
            records.changes = merged_changes(self.dir / "evolve", self.dir / "evolve-harness")
            self._keep(records)
        reference, final = self._reference_harness(), self.dir / "evolve-harness"  # its main: the evolved harness
        if not (final / ".git").is_dir() and not saved(self.dir, ("retrained", *(records.left_out or ()))):
            raise UserError(f"seed {self.seed}: the evolved harness ({final}) is gone, and the retrained and "
                            f"leave-one-out arms need it: delete {self.results / 'evolved.json'} to run the evolve "
                            f"arm again")
        after_rollout = frozenset({"reference_rollout"})  # arms that may take its result instead of training
        queue.add("reference_total", lambda: self._rollout(
            "reference_total", reference, steps + evolve.compute.search.steps, records), first=True)  # longest
        queue.add("blind_bundle", lambda: self._rollout("blind_bundle", lambda: self._bundle(records), steps, records))
        queue.add("retrained", lambda: self._rollout_or_reuse("retrained", final, reference, steps, records),
                  after_rollout)
        for change in self._top_changes(records):
            queue.add(without_arm(change.cand_id), partial(self._left_out, records, change, final, reference, steps),
                      after_rollout)

    def _rollout_or_reuse(self, arm: str, harness: Path, reference: Path, steps: int, records: ArmRecords) -> None:
        """`arm` under `harness` for the evolved policy's steps and the seed; reference_rollout's result instead
        when `harness` holds the reference's files, since that is reference_rollout's job (and it finished)."""
        if arm not in records.rollouts and "reference_rollout" in records.rollouts and \
                (harness / ".git").is_dir() and same_files(harness, reference):
            self._reuse(arm, "reference_rollout", records)
        self._rollout(arm, harness, steps, records)

    def _left_out(self, records: ArmRecords, change: Change, final: Path, reference: Path, steps: int) -> None:
        """The final harness without `change`; reference_rollout's result when that is the reference's files."""
        arm = without_arm(change.cand_id)
        harness = self.dir / f"{arm}-harness"
        if not (arm in records.rollouts and saved(self.dir, (arm,))) and \
                (reason := without_change(final, harness, change)) is not None:
            with self._lock:
                records.not_left_out[change.cand_id] = reason
                records.left_out = [a for a in records.left_out or [] if a != arm]
                self._keep(records)
            return
        self._rollout_or_reuse(arm, harness, reference, steps, records)

    def _reuse(self, arm: str, source: str, records: ArmRecords) -> None:
        """`arm` is `source`'s job (the same harness files, steps and seed): its result and record, with
        wall 0 and a note of whose they are, instead of training and scoring the same thing again."""
        # whole or absent: a resume finds no record for `arm` and takes the result again
        atomic_write_text(self.results / f"{arm}.json", (self.results / f"{source}.json").read_text())
        with self._lock:
            records.rollouts[arm] = records.rollouts[source].model_copy(update={"wall_s": 0.0})
            records.reused[arm] = source
            self._keep(records)

    def _keep(self, records: ArmRecords) -> None:
        """Save the finished arms' records now (see ARMS_RECORD); the lanes share them."""
        with self._lock:
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
                with self._lock:
                    records.rollouts.pop(arm, None)
                    records.reused.pop(arm, None)
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
                                             "--proposer", self._random_control(), "--control", "none")
        theirs, ours = (sealed_of(d) for d in (run_dir, self.dir / "evolve"))
        if theirs != ours:  # task ids do not reveal the secret, so scores on other tasks would look paired
            raise UserError(f"seed {self.seed}: the random-search run drew its splits from another secret "
                            f"({theirs}) than the evolve run ({ours}); delete {run_dir} and {data} to run it again")
        shutil.copyfile(run_dir / "final" / "evolved-test.json", result)
        shutil.copyfile(run_dir / "summary.md", self.dir / "random-summary.md")
        self._keep(records)
        return records.random

    def _random_control(self) -> str:
        """The random control at the compute of the proposer under test: the skills proposer often fills fewer
        than `candidates` slots, and a control given every slot would search with more (meta_agent/agents/
        random_proposer.py)."""
        proposer = (yaml.safe_load(self.evolve_config.read_text()) or {}).get("proposer", "skills")
        return "random-matched" if proposer == "skills" else "random"

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
        with self._lock:
            records.rollouts[arm] = ArmRecord(wall_s=seconds, compute=of_training(run_dir / "train"))
            self._keep(records)
        return records.rollouts[arm]
