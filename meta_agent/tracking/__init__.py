"""Experiment trackers (`--tracker`): TensorBoard, Trackio or MLflow, all writing local files.

Two writers, on either side of the trust boundary:
- inside the sandbox, the harness's `train` passes the backend to TRL's `report_to`; its files land in
  `tracker/` inside that training run's own output dir (`sandbox_env`);
- outside it, meta-agent writes `RUN/tracker/<backend>/` from the run's journal and the validated
  `metrics.jsonl` of every training run: per-generation scores, deltas, verdicts, spend (`export`).
See docs/tracking.md.
"""

from typing import Literal, get_args

Tracker = Literal["none", "tensorboard", "trackio", "mlflow"]
TRACKERS: tuple[str, ...] = get_args(Tracker)
