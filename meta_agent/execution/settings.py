"""Where a run's independent jobs run: `--executor local|ray`, `--parallel N`, `--ray-address`, `eval_shards`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ExecutorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["local", "ray"] = Field(
        "local", description="local: this machine (worker processes with --parallel > 1); ray: Ray tasks on a "
                             "cluster (docs/scale.md)")
    parallel: int | None = Field(None, ge=1, le=1024, description=(
        "local: worker processes running jobs (backtests, training runs, evaluations) side by side (default 1 = "
        "one after another, in the driver); ray: most tasks in flight (default: all that can run at once)"))
    ray_address: str | None = Field(None, description=(
        "ray: `auto` joins the cluster this node belongs to, `ray://HOST:PORT` a remote one; unset starts a "
        "private local Ray instance for the run"))
    retries: int = Field(2, ge=0, le=10, description="times a task whose worker or node died is run again before "
                                                     "it counts as that candidate's failure")
    cpus_per_task: float = Field(1.0, gt=0, description="CPUs a backtest task asks for (ray)")
    gpus_per_task: float = Field(0.0, ge=0, description="GPUs a backtest task asks for (ray; 0 = CPU training)")
    memory_mb_per_task: int | None = Field(None, ge=256, description="memory a backtest task asks for (ray)")
    eval_shards: int = Field(1, ge=1, le=256, description=(
        "split each sealed evaluation the driver asks for (main's control evaluation, the noise reruns', the "
        "final test evaluations) into this many jobs on consecutive slices of the tasks, merged into one "
        "result: the same answers and score as one job, sooner on a cluster; a candidate's selection "
        "evaluation stays inside its backtest job"))
