"""The benchmark driver as a user runs it: an ablation paired with an earlier benchmark's splits, a seed at a
time, and a driver stopped by SIGTERM that takes its running arm down with it."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from bench.efficacy_lib.compute import Compute
from bench.efficacy_lib.records import ARMS_RECORD, FIXED_ARMS, ArmRecords, SeedRun
from bench.efficacy_lib.report import (
    COMPARISONS,
    EfficacyReport,
    Paired,
    SeedReport,
    build,
    compare,
    render,
    seed_report,
)
from bench.efficacy_lib.splits import adopt, fingerprint
from meta_agent.domains.base import EvalResult, TaskResult
from meta_agent.errors import UserError
from meta_agent.stats import Interval, mcnemar_exact

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "efficacy.py"


def _secret(out: Path, seed: int, text: str) -> Path:
    path = out / f"seed-{seed}" / "data" / "sealed-secret"
    path.parent.mkdir(parents=True)
    path.write_text(text + "\n")
    return path


def test_an_ablation_takes_each_seeds_splits_from_the_benchmark_it_is_compared_with(tmp_path: Path) -> None:
    first = tmp_path / "slot"
    _secret(first, 2, "a" * 64)
    ablation = tmp_path / "archive" / "seed-2"
    adopt(ablation, first)
    copied = ablation / "data" / "sealed-secret"
    assert copied.read_text().strip() == "a" * 64
    assert copied.stat().st_mode & 0o077 == 0, "the secret stays private to its owner"
    assert fingerprint(ablation) == fingerprint(first / "seed-2") is not None
    adopt(ablation, first)  # resuming the ablation: the same secret, nothing to do

    other = tmp_path / "other"
    _secret(other, 2, "b" * 64)
    with pytest.raises(UserError, match="another secret") as e:
        adopt(ablation, other)  # its arms already drew tasks from the first secret: never overwritten
    assert "delete" in str(e.value)
    assert copied.read_text().strip() == "a" * 64
    with pytest.raises(UserError, match="no seed-3"):
        adopt(tmp_path / "archive" / "seed-3", first)
    assert fingerprint(tmp_path / "archive" / "seed-3") is None


def _report(seed: int, splits: str | None, evolved: float) -> EfficacyReport:
    one = Compute(steps=1, completions=8, runs=1)
    run = SeedRun(seed=seed, compute={a: one for a in FIXED_ARMS}, search={"evolved": one, "random_search": one},
                  wall_s={})
    ci = Interval(mean=0.1, low=0.0, high=0.2, n=60)
    paired = Paired(delta=ci, mcnemar=mcnemar_exact([1.0], [0.0]), differences=[0.1])
    seed_report = SeedReport(seed=seed, accuracy={a: (evolved if a == "evolved" else 0.2) for a in FIXED_ARMS},
                             n_tasks=60, paired={name: paired for name in COMPARISONS}, run=run, splits=splits)
    return EfficacyReport(domain="math", preset="cpu", seeds=[seed_report], summary={})


def test_the_ablation_table_says_which_rows_were_scored_on_the_same_tasks() -> None:
    paired = compare([("slot", _report(2, "1234abcd", 0.2)), ("archive", _report(2, "1234abcd", 0.25))])
    assert paired.count("| 1234abcd |") == 2 and "not (or not knowingly)" not in paired
    unpaired = compare([("slot", _report(0, "1234abcd", 0.3)), ("archive", _report(0, "99999999", 0.25))])
    assert "Seed(s) 0: the rows were not" in unpaired
    unknown = compare([("old", _report(1, None, 0.3)), ("new", _report(1, "1234abcd", 0.25))])
    assert "| old | 1 | ? |" in unknown and "Seed(s) 1:" in unknown
    alone = compare([("slot", _report(0, None, 0.3)), ("archive", _report(2, "1234abcd", 0.25))])
    assert "Seed(s)" not in alone, "one row per seed compares nothing"


def test_the_driver_refuses_splits_it_cannot_pair_before_running_anything(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, str(BENCH), "--preset", "tiny", "--seed", "1", "--splits-from",
                          str(tmp_path / "missing"), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert "has no seed-1 to take splits from" in res.stderr and "Traceback" not in res.stderr
    assert not (out / "seed-1" / "evolve").exists() and not (out / "seed-0").exists(), "only the seed asked for"


DRIVER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from bench.efficacy_lib import commands
    # a stand-in for a long arm: records its pid, then works until stopped
    commands.META_AGENT = (sys.executable, "-c",
                           "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)")
    commands.stop_on_sigterm()
    commands.run_meta_agent(sys.argv[1], data=Path(sys.argv[2]), who="seed 0")
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has finished; only its parent's wait is missing
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_stopping_the_benchmark_with_sigterm_stops_the_arm_it_was_running(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(pidfile), str(tmp_path / "data")],
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    child = None
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.is_file() and pidfile.read_text()) and time.monotonic() < deadline:
            assert driver.poll() is None, "the driver died before its arm started"
            time.sleep(0.1)
        child = int(pidfile.read_text())
        assert _alive(child)
        driver.send_signal(signal.SIGTERM)  # what a scheduler does: the driver's pid only, not its group
        assert driver.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), "the arm outlived the benchmark: an orphan holding the run's lock and the CPU"
    finally:
        driver.kill()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)


def _bench_module() -> Any:
    spec = importlib.util.spec_from_file_location("efficacy_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _finished_seed(out: Path, seed: int, settings: dict[str, Any] | None, correct: int, domain: str = "math",
                   diffs: int = 0) -> None:
    """A seed an earlier invocation finished: its per-task results and wall.json, no runs (as in a clone).
    SWE: the evolved arm's first `diffs` episodes left a diff."""
    results = out / f"seed-{seed}" / "results"
    results.mkdir(parents=True)
    for arm in FIXED_ARMS:
        right = correct if arm == "evolved" else 1
        left = diffs if arm == "evolved" else 0
        tasks = [TaskResult(task_id=f"t{i}", correct=i < right, score=float(i < right),
                            answer="--- a/f.py\n+++ b/f.py\n" if i < left else "") for i in range(6)]
        result = EvalResult(domain=domain, split="test", policy=arm, score=Interval(mean=0, low=0, high=0, n=6),
                            results=tasks, wall_time=1.0)
        (results / f"{arm}.json").write_text(result.model_dump_json())
    one = Compute(steps=1, completions=8, runs=1)
    run = SeedRun(seed=seed, compute={a: one for a in FIXED_ARMS}, search={"evolved": one, "random_search": one},
                  wall_s={"evolve": 60.0}, settings=settings)
    (out / f"seed-{seed}" / "wall.json").write_text(run.model_dump_json())


def _driver(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), "--preset", "tiny", *args], capture_output=True, text=True,
                          timeout=120)


def test_a_seed_at_a_time_builds_one_report_over_every_seed_finished_with_the_same_settings(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _, settings = _bench_module().arm_settings("tiny", "auto", archive_parents=1)
    _finished_seed(out, 0, settings, correct=4)  # finished in an earlier session
    _finished_seed(out, 1, settings, correct=5)  # the seed this invocation asks for (already done: no arm runs)
    _finished_seed(out, 2, {**settings, "archive_parents": 0}, correct=6)  # another ablation's seed
    (out / "seed-3" / "results").mkdir(parents=True)  # started, not finished
    _finished_seed(out, 4, None, correct=2)  # finished by an older driver: its evolve run still says how
    (out / "seed-4" / "evolve").mkdir()
    (out / "seed-4" / "evolve" / "run.json").write_text(json.dumps({"settings": {**settings, "seed": 4}}))
    _finished_seed(out, 5, None, correct=1)  # ... and one whose run is gone

    res = _driver("--seed", "1", "--archive-parents", "1", "--out", str(out))
    assert res.returncode == 0, res.stderr
    report = EfficacyReport.model_validate_json((out / "report.json").read_text())
    assert [s.seed for s in report.seeds] == [0, 1, 4], "2 (other settings), 3 (unfinished), 5 (unknown) left out"
    assert [s.accuracy["evolved"] for s in report.seeds] == [4 / 6, 5 / 6, 2 / 6]
    assert report.summary["evolved - reference"].seeds == 3
    assert "also covers seed(s) 0, 4" in res.stdout
    assert "left out of the report: seed 2: run with other settings (archive_parents)" in res.stdout
    assert "left out of the report: seed 5: its settings were not recorded" in res.stdout
    assert "seed 3" not in res.stdout
    assert "3 seed(s)" in (out / "report.md").read_text()


def test_a_seed_started_with_other_settings_is_refused_not_resumed_under_new_ones(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _, settings = _bench_module().arm_settings("tiny", "auto")
    _finished_seed(out, 0, settings, correct=3)
    before = (out / "seed-0" / "wall.json").read_text()
    res = _driver("--seed", "0", "--archive-parents", "1", "--out", str(out))
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "was run with other settings (archive_parents)" in res.stderr and "another --out" in res.stderr
    assert not (out / "report.json").exists()
    assert (out / "seed-0" / "wall.json").read_text() == before

    # Unfinished, its evolve run lost with its machine: the arms' record still says how it was started.
    started = out / "seed-1"
    started.mkdir()
    (started / ARMS_RECORD).write_text(ArmRecords(settings=settings).model_dump_json())
    res = _driver("--seed", "1", "--archive-parents", "1", "--out", str(out))
    assert res.returncode != 0 and "was run with other settings (archive_parents)" in res.stderr, res.stderr
    assert not (started / "evolve").exists(), "nothing ran"


def test_by_default_a_run_goes_to_its_own_folder_not_into_the_documented_measurements(tmp_path: Path) -> None:
    # bench/results/efficacy-cpu holds a measurement whose runs are not kept: a new user's `make efficacy`
    # there failed on its first seed ("compute cannot be counted") after overwriting its settings files.
    res = subprocess.run([sys.executable, str(BENCH), "--preset", "tiny", "--seed", "0", "--splits-from",
                          str(tmp_path / "missing")], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode != 0 and "has no seed-0 to take splits from" in res.stderr
    assert (tmp_path / "runs" / "efficacy-tiny" / "run.yaml").is_file(), "where evolve puts its runs: ./runs"
    assert not list((ROOT / "bench" / "results").glob("efficacy-tiny*"))


def test_bad_arguments_are_refused_with_the_reason_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for args, reason in ((["--seeds", "0"], "--seeds: 0 is below 1"), (["--seed", "-1"], "--seed: -1 is below 0"),
                         (["--archive-parents", "two"], "'two' is not a whole number"),
                         (["--confirm-steps", "-4"], "--confirm-steps: -4 is below 0"),
                         (["--proposer", "llm"], "--proposer llm needs --model"),
                         (["--model", "openai/x"], "--model is for --proposer llm")):
        res = _driver(*args, "--out", str(out))
        assert res.returncode == 2 and reason in res.stderr, (args, res.stderr)
    assert not out.exists(), "nothing was set up for a command that was refused"

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "report.json").write_text('{"seeds": "many"}')
    for folder, reason in ((tmp_path / "missing", "has no report.json"),
                           (tmp_path / "notes", "is not an efficacy report")):
        res = _driver("--compare", f"x={folder}")
        assert res.returncode == 1 and reason in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_no_sealed_secret_is_tracked_and_a_new_one_would_be_ignored() -> None:
    import git

    repo = git.Repo(ROOT)
    tracked = [p for p in repo.git.ls_files().splitlines() if Path(p).name == "sealed-secret"]
    assert tracked == [], "a committed secret makes its test split public"
    probe = "bench/results/efficacy-new/seed-0/data/sealed-secret"
    assert repo.ignored(probe) == [probe], "a benchmark's secret must not be addable by `git add -A`"


def test_a_seed_the_template_start_benchmark_began_is_refused_not_finished_with_other_arms(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _, settings = _bench_module().arm_settings("tiny", "auto")
    started = out / "seed-0"
    (started / "results").mkdir(parents=True)
    # what that benchmark's arms.json looked like: no version, its own evolve record (template start)
    (started / ARMS_RECORD).write_text(json.dumps({"settings": settings, "rollouts": {}}))
    res = _driver("--seed", "0", "--out", str(out))
    assert res.returncode != 0 and "template-start benchmark" in res.stderr and "Traceback" not in res.stderr
    assert not (started / "evolve").exists(), "nothing ran"


def test_a_seed_resumed_with_int_keyed_settings_matches_what_its_json_record_says(tmp_path: Path) -> None:
    """The cpu preset's `math.sealed_levels` is keyed by level number; the arms record, read back from JSON,
    keys it by string. A resumed seed must not be refused (or left out of the report) for that."""
    from bench.efficacy_lib.finished import check_settings, differing

    settings = {"domain": "math", "math": {"sealed_levels": {1: 0.4, 2: 0.4, 3: 0.2}, "test_size": 200}}
    seed_dir = tmp_path / "seed-1"
    seed_dir.mkdir()
    (seed_dir / ARMS_RECORD).write_text(ArmRecords(settings=json.loads(json.dumps(settings))).model_dump_json())
    check_settings(seed_dir, settings)
    assert differing(settings, json.loads(json.dumps(settings))) == []
    changed = {"domain": "math", "math": {"sealed_levels": {1: 0.5, 2: 0.3, 3: 0.2}, "test_size": 200}}
    with pytest.raises(UserError, match=r"math\.sealed_levels"):
        check_settings(seed_dir, changed)


def test_every_preset_gives_every_domain_settings_its_commands_accept() -> None:
    # A preset whose settings a command refuses would fail its seed hours in, at the arm that first reads them.
    from meta_agent.config import EvolveConfig, RolloutConfig, build

    bench = _bench_module()
    for preset in bench.PRESETS:
        for domain in bench.DOMAINS:
            run, evolve = bench.arm_settings(preset, "bwrap", domain=domain)
            build(RolloutConfig, run, {})
            config = build(EvolveConfig, evolve, {})
            assert config.domain == domain and config.domain_settings().model_dump(), (preset, domain)
            assert "search_by_domain" not in evolve, (preset, domain)


def test_the_swe_benchmark_draws_the_easy_tier_with_a_search_sized_for_its_steps() -> None:
    # A reference GRPO step on SWE is ten times a math step on this machine: the math search would take a day.
    bench = _bench_module()
    run, evolve = bench.arm_settings("cpu", "bwrap", domain="swe")
    assert run["swe"]["tiers"] == ["easy"] and run["swe"]["train_size"] is None, "every easy train instance"
    assert (evolve["generations"], evolve["candidates"], evolve["train_steps"]) == (2, 2, 4)
    assert bench.preset_for("cpu", "swe")["test_limit"] == run["swe"]["test_size"] == 56
    _, math = bench.arm_settings("cpu", "bwrap", domain="math")
    assert (math["generations"], math["train_steps"]) == (3, 8), "the math benchmark keeps its measured search"


def test_the_cpu_benchmark_gives_its_search_and_the_random_control_one_search_step_budget() -> None:
    # Unbounded, the random control's blind draws that scored exactly 0 went to the confirmation rung and it
    # trained 144 search steps to the evolve arm's 32 (bench/results/efficacy-remeasure/same-splits).
    from meta_agent.config import EvolveConfig, build

    bench = _bench_module()
    _, math = bench.arm_settings("cpu", "bwrap", domain="math")
    assert math["search_steps"] == 48
    # the random run reads the same evolve.yaml, with only its proposer and control changed on the command line
    control = build(EvolveConfig, math, {"proposer": "random-matched", "control": "none"})
    assert control.search_steps == build(EvolveConfig, math, {}).search_steps == 48
    _, chosen = bench.arm_settings("cpu", "bwrap", domain="math", search_steps=32)
    assert chosen["search_steps"] == 32


def test_an_swe_report_counts_the_test_episodes_that_left_a_diff_where_none_resolved(tmp_path: Path) -> None:
    # With a policy that resolves nothing every accuracy reads 0: how far each arm got is the one signal left.
    for domain, shown in (("swe", True), ("math", False)):
        out = tmp_path / domain
        _finished_seed(out, 0, None, correct=0, domain=domain, diffs=2)
        run = SeedRun.model_validate_json((out / "seed-0" / "wall.json").read_text())
        report = seed_report(out / "seed-0", run)
        text = render(build(domain, "tiny", [report]))
        if shown:
            assert report.diffs["evolved"] == 2 and report.diffs["reference"] == 0
            assert "Test episodes that left a diff: evolved 2/6, reference 0/6" in text
            assert "the same for every seed" in text
        else:
            assert not report.diffs and "left a diff" not in text
