"""Where a generation's independent work runs (docs/scale.md): the `Executor` seam (`base.py`), the
job it runs (`jobs.py`) and its backends (`local.py`, `ray_executor.py`)."""
