"""`--tracker`: TRL's report_to inside the sandbox writes into the training run's own dir, and each
backend's files read back, through the backend's own reader, the metrics the run really logged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from meta_agent.domains.math import MathDomain
from meta_agent.gitops import init_harness
from meta_agent.tracking.export import TrackerUnavailable, check_available
from meta_agent.training import train_commit, write_train_tasks
from sandboxes import Limits, Sandbox

pytestmark = pytest.mark.slow  # trains the tiny policy once per backend


def tensorboard_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(s.step, s.value) for s in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def tensorboard_dirs(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("events.out.tfevents.*")})


def mlflow_runs(store: Path) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """run name -> metric -> [(step, value)], read by MLflow's own client."""
    import os

    from mlflow.tracking import MlflowClient

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    client = MlflowClient(tracking_uri=f"file:{store}")
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for exp in client.search_experiments():
        for run in client.search_runs([exp.experiment_id]):
            out[run.info.run_name] = {k: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, k)]
                                      for k in run.data.metrics}
    return out


def trackio_logs(trackio_dir: Path) -> dict[str, list[dict[str, object]]]:
    """run name -> logged rows, from the project database Trackio keeps (one SQLite file per project)."""
    import json

    out: dict[str, list[dict[str, object]]] = {}
    for db in trackio_dir.glob("*.db"):
        with sqlite3.connect(db) as conn:
            for run_name, step, metrics in conn.execute("SELECT run_name, step, metrics FROM metrics ORDER BY step"):
                out.setdefault(run_name, []).append({"step": step, **json.loads(metrics)})
    return out


# TensorBoard's run of this path is the evolve reference run (tests/evolve/test_tracker_export.py).
@pytest.mark.parametrize("tracker", ["mlflow", "trackio"])
def test_harness_training_reports_to_the_tracker_inside_its_own_dir(
    tracker: str, tmp_path: Path, tiny_policy: Path, sandbox: Sandbox, small_math: MathDomain
) -> None:
    repo = init_harness(tmp_path / "harness", "math")
    tasks = write_train_tasks(small_math, tmp_path / "inputs")
    out = tmp_path / "gen-000" / "main"
    run = train_commit(repo=repo, commit=repo.head.commit.hexsha, domain=small_math, sandbox=sandbox,
                       limits=Limits(), policy=tiny_policy, root_policy=tiny_policy, steps=2, seed=0,
                       work_dir=tmp_path / "work", out_dir=out, tasks_file=tasks, tracker=tracker)  # type: ignore
    logs = out / "tracker"
    assert logs.is_dir(), f"{tracker}: nothing written under {out}"
    assert run.output.metrics, "the contract files are still written"
    if tracker == "mlflow":
        runs = mlflow_runs(logs / "mlruns")
        assert list(runs) == ["gen-000/main"]
        assert [step for step, _ in runs["gen-000/main"]["loss"]] == [1, 2]
    else:
        rows = trackio_logs(logs / "trackio")
        assert list(rows) == ["gen-000/main"]
        assert sum("train/loss" in r for r in rows["gen-000/main"]) == 2


def test_without_a_tracker_the_harness_reports_nowhere(tmp_path: Path) -> None:
    # The default is off: no tracker directory, and report_to is empty in the harness.
    import subprocess
    import sys

    harness = init_harness(tmp_path / "harness", "math").working_dir
    code = "from harness.train import tracking; print(tracking())"
    res = subprocess.run([sys.executable, "-c", code], cwd=harness, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert res.stdout.strip() == "{'report_to': []}", res.stderr


def test_a_missing_tracker_package_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    with pytest.raises(TrackerUnavailable, match=r"mlflow package is not installed.*meta-agent\[trackers\]"):
        check_available("mlflow")
    check_available("none")


@pytest.mark.parametrize("tracker", ["none", "tensorboard", "trackio", "mlflow"])
def test_training_skips_the_mlflow_import_unless_it_reports_to_mlflow(tracker: str, tmp_path: Path) -> None:
    # An installed mlflow costs every `harness train` ~1.6 s of imports through TRL; only an MLflow run needs it.
    from meta_agent.tracking.sandbox_env import tracker_env

    env = tracker_env(tracker, tmp_path / "gen-000" / "main")  # type: ignore[arg-type]
    assert (env.get("DISABLE_MLFLOW_INTEGRATION") == "TRUE") == (tracker != "mlflow")


def test_the_pinned_trl_honours_the_mlflow_switch(tmp_path: Path) -> None:
    # The switch is TRL's and transformers' to honour: an upgrade that ignores it would silently bring the cost back.
    import os
    import subprocess
    import sys

    from meta_agent.tracking.sandbox_env import tracker_env

    code = "import sys, trl.extras.profiling; print('mlflow' in sys.modules)"
    base = {k: v for k, v in os.environ.items() if k != "DISABLE_MLFLOW_INTEGRATION"}
    imported = {}
    for tracker in ("mlflow", "none"):
        env = {**base, **tracker_env(tracker, tmp_path / tracker)}  # type: ignore[arg-type]
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        imported[tracker] = res.stdout.strip()
    assert imported == {"mlflow": "True", "none": "False"}
