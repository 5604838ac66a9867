"""The executor seam: a generation's training backtests run as Ray tasks (a private 2-CPU Ray
instance) or in local worker processes, and the run decides exactly what the in-driver run
decides; a worker killed mid-backtest is run again, a killed driver resumes to the same lineage."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from meta_agent.execution.jobs import WORKER_FILE
from tests.evolve.conftest import data_env, meta_agent, tiny_config
from tests.evolve.lineage_signature import signature

# whole evolve loops; each Ray one starts a local Ray instance: tests/conftest.py keeps them on one xdist worker.
# Their harness trains by script (tests/scripted_harness): what is tested is where and how often backtests run.
pytestmark = pytest.mark.slow

DECISIONS = ("candidates", "stages", "verdicts", "merges", "final_main_tree", "mainline")


def _same_decisions(run: Path, reference: Path, generations: int | None = None) -> None:
    got, expected = signature(run, generations), signature(reference)
    for part in DECISIONS:
        assert got[part] == expected[part], f"{part} differs from the in-driver run"


def _worker_files(run: Path) -> list[Path]:
    return sorted(run.glob(f"gen-*/cand-*/{WORKER_FILE}"))


def _trains_journaled_once(run: Path, generations: int | None = None) -> list[str]:
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]
    keys = [e["key"] for e in events if e["type"] == "stage_done" and e["data"]["stage"] == "train"]
    assert len(keys) == len(set(keys)), f"a backtest was journaled twice: {keys}"
    return [k for k in keys if generations is None or int(k.split("/")[0][1:]) < generations]


def _start(args: list[str], data: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "meta_agent", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, env=data_env(data, scripted=True))


def _kill_first_worker(run: Path, proc: subprocess.Popen[bytes], timeout: float = 900) -> dict[str, object]:
    """SIGKILL the process running the first training backtest, once, while its harness is training."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        for f in _worker_files(run):
            if not (f.parent / "train" / "metrics.jsonl.partial").exists():
                continue  # not yet training (or already done)
            try:
                worker = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            os.kill(int(worker["pid"]), signal.SIGKILL)
            return {**worker, "file": str(f)}
        time.sleep(0.05)
    raise AssertionError("the run finished without ever starting a training backtest in a worker")


@pytest.mark.parametrize("executor", [["--executor", "ray"], ["--executor", "local", "--parallel", "2"]],
                         ids=["ray", "local-parallel"])
def test_backtests_fan_out_survive_a_killed_worker_and_decide_as_in_the_driver(
        executor: list[str], scripted_reference_run: Path, tmp_path: Path) -> None:
    run, data = tmp_path / "fanned", tmp_path / "data"
    # sealed evaluations in 2 shards each: the merged scores must decide exactly what whole ones did.
    # One generation more than the reference run, which merges in its last: the static arm then has a
    # generation of its own to train beside the third generation's backtests.
    config = tiny_config(run, executor={"eval_shards": 2}, generations=3)
    proc = _start(["evolve", "--config", str(config), *executor], data)
    killed = _kill_first_worker(run, proc)
    out, _ = proc.communicate(timeout=1200)
    assert proc.returncode == 0, out.decode()[-4000:]
    assert killed["pid"] != os.getpid() and killed["pid"] != proc.pid, "the job ran in the driver, not a worker"
    again = json.loads(Path(str(killed["file"])).read_text())
    assert again["pid"] != killed["pid"], "the killed backtest was not run again in another worker"
    _same_decisions(run, scripted_reference_run, generations=2)
    expected = sorted(_trains_journaled_once(scripted_reference_run))
    assert sorted(_trains_journaled_once(run, generations=2)) == expected, \
        "the first two generations trained other candidates than the in-driver run did"
    pids = {json.loads(f.read_text())["pid"] for f in _worker_files(run)}
    assert proc.pid not in pids, "a backtest ran in the driver"  # (Ray may reuse one worker for both)
    _main_and_noise_side_by_side(run, proc.pid)
    _static_arm_in_workers(run, proc.pid)
    assert list(run.glob("gen-000/control-eval.shard-*.json")), "main's evaluation was not sharded"


def _main_and_noise_side_by_side(run: Path, driver: int) -> None:
    """Generation 0 measures the noise floor whatever main scores: its rerun trains beside main's run."""
    main, noise = (json.loads((run / "gen-000" / d / WORKER_FILE).read_text()) for d in ("main", "noise-0"))
    assert driver not in (main["pid"], noise["pid"]) and main["pid"] != noise["pid"]
    assert main["started"] < noise["finished"] and noise["started"] < main["finished"], \
        "main's training and the noise rerun ran one after the other"


def _static_arm_in_workers(run: Path, driver: int) -> None:
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]
    static = [e for e in events if (e["key"] or "").startswith("final/static-g")]
    assert static, "main changed before the last generation, so the static arm trains a generation of its own"
    for e in static:  # trained beside generation g's backtests, not after the last generation
        g = int(e["key"].removeprefix("final/static-g"))
        done = next(i for i, d in enumerate(events) if d["key"] == f"g{g}/done")
        assert events.index(e) < done, f"{e['key']} was trained after its generation"
        assert json.loads((Path(e["data"]["out"]) / WORKER_FILE).read_text())["pid"] != driver


def test_driver_killed_mid_backtest_resumes_to_the_same_lineage(scripted_reference_run: Path, tmp_path: Path) -> None:
    run, data = tmp_path / "driver-killed", tmp_path / "data"
    proc = _start(["evolve", "--config", str(tiny_config(run)), "--executor", "ray"], data)
    deadline = time.monotonic() + 900
    while not any((f.parent / "train" / "metrics.jsonl.partial").exists() for f in _worker_files(run)) \
            and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before a backtest started"
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its private Ray instance: the machine went down
    proc.wait()
    res = meta_agent("resume", str(run), "--executor", "ray", data_dir=data, scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    _same_decisions(run, scripted_reference_run)
    _trains_journaled_once(run)


def test_unreachable_cluster_is_one_clear_error_before_anything_runs(tmp_path: Path) -> None:
    run = tmp_path / "nowhere"
    res = meta_agent("evolve", "--config", str(tiny_config(run)), "--executor", "ray",
                     "--ray-address", "127.0.0.1:9", data_dir=tmp_path / "data", timeout=300)
    assert res.returncode != 0
    text = res.stdout + res.stderr
    assert "cannot reach Ray at 127.0.0.1:9" in text and "Traceback" not in text, text[-3000:]
    assert not (run / "events.jsonl").exists(), "the run started although its executor was not there"


def test_missing_ray_is_named_with_the_install_command() -> None:
    code = ("import sys; sys.modules['ray'] = None\n"
            "from meta_agent.execution.base import make_executor\n"
            "from meta_agent.execution.settings import ExecutorSettings\n"
            "make_executor(ExecutorSettings(kind='ray'))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert res.returncode != 0
    assert "pip install 'meta-agent[ray]'" in res.stderr
