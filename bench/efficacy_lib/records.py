"""What a benchmark seed keeps of its arms: their names, each finished arm's record (ARMS_RECORD), and the
seed's summary once every arm is done (wall.json). bench/results keeps these with the per-task results."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench.efficacy_lib.compute import Compute, EvolveCompute
from bench.efficacy_lib.harnesses import Bundle, Change

FIXED_ARMS = ("evolved", "reference", "random_search", "reference_total", "retrained", "reference_rollout",
              "reference_again", "blind_bundle", "template")
"""Every seed's arms; the leave-one-out arms (`without-<cand>`) depend on what the search merged."""
ARMS_RECORD = "arms.json"
"""Each finished arm's record (wall seconds, compute, and what the evolve run found), written as soon as the
arm finishes. bench/results keeps it with the per-task results but not the runs (.gitignore), so a benchmark
killed in a later arm, on a machine that kept only the tracked files, still finishes the seed: without it a
saved result whose run is gone cannot have its compute counted, and the whole seed had to be re-run."""
RECORDS_VERSION = 2


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
    reused: dict[str, str] = Field(default_factory=dict)
    """Arms that were another arm's job (`retrained` when the search merged nothing: the final harness is the
    reference's files), each with the arm whose result and compute it took."""
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
    reused: dict[str, str] = Field(default_factory=dict)
    """See SeedRun.reused."""


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


def saved(seed_dir: Path, arms: tuple[str, ...]) -> bool:
    """These arms of the seed have their per-task results saved; a deleted result asks for its arm again."""
    return all((seed_dir / "results" / f"{arm}.json").is_file() for arm in arms)


__all__ = ["ARMS_RECORD", "FIXED_ARMS", "RECORDS_VERSION", "ArmRecord", "ArmRecords", "EvolveRecord", "SeedRun",
           "finished_run", "saved", "saved_run", "without_arm"]
