"""What a sandboxed `harness train` needs to report to a tracker: the backend for TRL's `report_to` and
where each backend writes, always inside that run's own (already writable) output dir."""

from __future__ import annotations

from pathlib import Path

from meta_agent.tracking import Tracker

TRAIN_TRACKER_DIR = "tracker"
"""Inside a training run's --out: what TRL's own callback wrote there (raw, per optimizer step)."""


def run_name(out_dir: Path) -> str:
    """A training run's name in the tracker: its place in the run dir, e.g. gen-001/cand-0/train."""
    parts = out_dir.parts
    return "/".join(parts[-3:] if len(parts) >= 3 and parts[-1] == "train" else parts[-2:])


def tracker_env(tracker: Tracker, out_dir: Path) -> dict[str, str]:
    """Environment for `harness train`: HARNESS_REPORT_TO for the harness, the backend's own variables.

    Unless the run reports to MLflow, TRL is told not to import it (`DISABLE_MLFLOW_INTEGRATION`): an
    installed mlflow (the `trackers` extra) otherwise costs every training ~1.6 s of imports it never uses."""
    quiet = {} if tracker == "mlflow" else {"DISABLE_MLFLOW_INTEGRATION": "TRUE"}
    if tracker == "none":
        return quiet
    logs = out_dir.resolve() / TRAIN_TRACKER_DIR
    env = {"HARNESS_REPORT_TO": tracker, "HARNESS_RUN_NAME": run_name(out_dir),
           "HF_HUB_OFFLINE": "1", **quiet}  # nothing in a sandbox can reach a hub; say so before a library tries
    if tracker == "tensorboard":
        env["TENSORBOARD_LOGGING_DIR"] = str(logs / "tensorboard")
    elif tracker == "mlflow":
        env.update(MLFLOW_TRACKING_URI=f"file:{logs / 'mlruns'}", MLFLOW_EXPERIMENT_NAME="harness-train",
                   MLFLOW_ALLOW_FILE_STORE="true")
    elif tracker == "trackio":
        env["TRACKIO_DIR"] = str(logs / "trackio")
    return env
