"""Write a run's metrics (run_metrics) to `RUN/tracker/<backend>/`, which the backend's own viewer opens.

The tracker dir is rebuilt whole from the journal each time (after every generation, at the end, or by
`meta-agent track`): a resumed run re-writes it instead of logging a generation twice, and a crash mid-way
leaves the previous copy in place (the new one is built beside it and swapped in).

`sync_tracker` runs the export in a child process: tracker libraries keep global state (Trackio reads its
directory once at import; MLflow has an active run), may print, and must not take the run down with them.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from meta_agent.errors import UserError
from meta_agent.tracking import TRACKERS, Tracker
from meta_agent.tracking.run_metrics import GENERATIONS_RUN, RunMetrics, run_metrics

TRACKER_DIR = "tracker"
EXPORT_TIMEOUT_S = 300


class TrackerUnavailable(UserError, RuntimeError):
    """The backend's package is not installed."""


def tracker_dir(run_dir: Path, tracker: Tracker) -> Path:
    return run_dir / TRACKER_DIR / tracker


def _tensorboard(m: RunMetrics, out: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    for name, rows, params in m.runs():
        writer = SummaryWriter(str(out / name))
        if params:
            writer.add_text("params", "\n".join(f"- {k}: {v}" for k, v in sorted(params.items())), 0)
        prefix = "" if name == GENERATIONS_RUN else "train/"
        for step, values in rows:
            for key, value in values.items():
                writer.add_scalar(prefix + key, value, step)
        writer.close()


def _mlflow(m: RunMetrics, out: Path) -> None:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # local files are the point; the server is optional
    client = MlflowClient(tracking_uri=f"file:{out.resolve()}")
    experiment = client.create_experiment(f"meta-agent {m.run_id}")
    now = int(time.time() * 1000)
    for name, rows, params in m.runs():
        run = client.create_run(experiment, run_name=name, tags={"meta-agent.run_id": m.run_id})
        metrics = [Metric(k, v, now, step) for step, values in rows for k, v in values.items()]
        for i in range(0, max(len(metrics), 1), 900):  # the file store takes at most 1000 per batch
            client.log_batch(run.info.run_id, metrics=metrics[i:i + 900],
                             params=[Param(k, v) for k, v in params.items()] if i == 0 else [])
        client.set_terminated(run.info.run_id)


def _trackio(m: RunMetrics, out: Path) -> None:
    # Trackio reads TRACKIO_DIR when it is first imported: only a fresh process (sync_tracker) gets `out`.
    if os.environ.get("TRACKIO_DIR") != str(out.resolve()):
        raise RuntimeError("the trackio export must run in a process started with TRACKIO_DIR set to its dir")
    import trackio

    with contextlib.redirect_stdout(io.StringIO()):  # it prints how to open its dashboard at every init
        for name, rows, params in m.runs():
            trackio.init(project=f"meta-agent-{m.run_id}", name=name, config=dict(params), auto_log_cpu=False,
                         auto_log_gpu=False, embed=False)
            for step, values in rows:
                trackio.log(dict(values), step=step)
            trackio.finish()


WRITERS = {"tensorboard": _tensorboard, "mlflow": _mlflow, "trackio": _trackio}
"""Each backend's package is named as the tracker is."""


def check_available(tracker: Tracker) -> None:
    """One clear error before a run starts, rather than a missing import at the end of a generation."""
    import importlib.util

    if tracker != "none" and importlib.util.find_spec(tracker) is None:
        raise TrackerUnavailable(f"--tracker {tracker}: the {tracker} package is not installed "
                                 f"(pip install 'meta-agent[trackers]', or `make setup`, installs all three)")


def export_run(run_dir: Path, tracker: Tracker) -> Path:
    """Rebuild `RUN/tracker/<tracker>/` in this process; returns it."""
    if tracker not in WRITERS:
        raise ValueError(f"unknown tracker {tracker!r}; choose one of {', '.join(TRACKERS[1:])}")
    metrics = run_metrics(run_dir)
    final = tracker_dir(run_dir, tracker)
    building = final.with_name(f".{tracker}.new")
    old = final.with_name(f".{tracker}.old")
    for stale in (building, old):
        shutil.rmtree(stale, ignore_errors=True)
    building.mkdir(parents=True)
    WRITERS[tracker](metrics, building)
    if final.exists():
        final.rename(old)
    building.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def sync_tracker(run_dir: Path, tracker: Tracker, timeout: float = EXPORT_TIMEOUT_S) -> str | None:
    """Export in a child process; returns None, or why it failed (the run goes on either way)."""
    if tracker == "none":
        return None
    env = {**os.environ, "TRACKIO_DIR": str(tracker_dir(run_dir, tracker).with_name(f".{tracker}.new").resolve()),
           "HF_HUB_OFFLINE": "1", "MLFLOW_ALLOW_FILE_STORE": "true"}
    try:
        result = subprocess.run([sys.executable, "-m", "meta_agent.tracking", str(run_dir), tracker], env=env,
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"the {tracker} export took over {timeout:.0f} s"
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
        return f"the {tracker} export failed: {' '.join(tail)[:1000]}"
    return None


def viewer_hint(run_dir: Path, tracker: Tracker) -> str:
    """How a user opens what `export_run` wrote (and, for TensorBoard, TRL's own per-run logs beside it)."""
    out = tracker_dir(run_dir, tracker)
    if tracker == "tensorboard":
        return f"tracker files: {out}; open with: tensorboard --logdir {run_dir}"
    if tracker == "mlflow":
        return (f"tracker files: {out}; open with the MLflow server (pip install mlflow): "
                f"MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri file:{out.resolve()}")
    if tracker == "trackio":
        return (f"tracker files: {out}; open with: TRACKIO_DIR={out.resolve()} trackio show "
                f"--project meta-agent-{run_dir.resolve().name}")
    return ""
