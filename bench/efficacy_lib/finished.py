"""The seeds an earlier invocation finished in the same results folder, for the report to cover them too.

`bench/efficacy.py --seed 0` runs one seed, but its report covers every seed of `--out` that is finished
(every arm's per-task results and its wall.json saved) and was run with the same settings: running the seeds
one session at a time builds up one report instead of replacing it with each seed's own. A seed run with
other settings (say, before `--archive-parents` was changed) is left out and named, never mixed in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.efficacy_lib.records import ARMS_RECORD, ArmRecords, SeedRun, finished_run, saved_run
from meta_agent.errors import UserError

IGNORED = frozenset({"sandbox"})
"""Settings that do not change what a seed measures (how arms are isolated, not what they train)."""


def differing(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """The settings of ours that a seed run with `theirs` did not share. `theirs` may hold more (an evolve
    run's run.json records every default as well). `theirs` was read back from JSON, so ours is compared in
    the form JSON gives back: `math.sealed_levels` is keyed by int here and by string there."""
    ours = json.loads(json.dumps(ours))
    out = []
    for key, value in ours.items():
        if key in IGNORED:
            continue
        if isinstance(value, dict) and isinstance(theirs.get(key), dict):
            out += [f"{key}.{inner}" for inner in differing(value, theirs[key])]
        elif theirs.get(key) != value:
            out.append(key)
    return out


def recorded_settings(seed_dir: Path, run: SeedRun | None) -> dict[str, Any] | None:
    """The settings a seed was run with: its wall.json's (`run`), else its arms' record (a seed not finished,
    whose runs may be gone), else (finished before either recorded them) its evolve run's run.json, when that
    run is on disk."""
    if run is not None and run.settings is not None:
        return run.settings
    record = seed_dir / ARMS_RECORD
    if record.is_file() and (settings := ArmRecords.model_validate_json(record.read_text()).settings) is not None:
        return settings
    try:
        settings = json.loads((seed_dir / "evolve" / "run.json").read_text()).get("settings")
    except (OSError, ValueError):
        return None
    return settings if isinstance(settings, dict) else None


def check_settings(seed_dir: Path, settings: dict[str, Any]) -> None:
    """Refuse to go on with (or report) a seed that was started with other settings: its saved arms would be
    reported under the new ones, and a resumed evolve run would go on with its own."""
    theirs = recorded_settings(seed_dir, saved_run(seed_dir))
    if theirs is not None and (differ := differing(settings, theirs)):
        raise UserError(f"{seed_dir} was run with other settings ({', '.join(differ)}): use another --out, or "
                        f"delete {seed_dir} to run it again with these")


def finished_seeds(out: Path, skip: set[int], settings: dict[str, Any]
                   ) -> tuple[list[tuple[Path, SeedRun]], list[str]]:
    """(seed folder, its saved run) for each finished seed of `out` not in `skip` whose settings match, and a
    line for each finished seed left out with its reason."""
    kept: list[tuple[Path, SeedRun]] = []
    left_out: list[str] = []
    numbered = {int(m.group(1)): p for p in out.glob("seed-*") if (m := re.fullmatch(r"seed-(\d+)", p.name))}
    for seed in sorted(set(numbered) - skip):
        seed_dir = numbered[seed]
        run = finished_run(seed_dir)
        if run is None:
            continue  # unfinished: the command that runs it reports it
        theirs = recorded_settings(seed_dir, run)
        if theirs is None:
            left_out.append(f"seed {seed}: its settings were not recorded (finished by an older driver, and its "
                            f"evolve run is gone); run it with --seed {seed} to report it")
        elif differ := differing(settings, theirs):
            left_out.append(f"seed {seed}: run with other settings ({', '.join(differ)})")
        else:
            kept.append((seed_dir, run))
    return kept, left_out
