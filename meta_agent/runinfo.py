"""run.json: what a run directory holds (command, domain, harness, policy, settings)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from meta_agent.errors import RunDirError
from meta_agent.fsutil import atomic_write_text

RUN_FILE = "run.json"


class RunInfo(BaseModel):
    command: str
    domain: str
    harness: str
    policy: str
    created: str
    settings: dict[str, Any]


def default_run_dir(command: str, domain: str, root: Path = Path("runs")) -> Path:
    """runs/<time>-<command>-<domain> (a plugin's `module:Class` becomes its class name)."""
    label = domain.rpartition(":")[2] if ":" in domain else domain
    return root / f"{time.strftime('%Y%m%d-%H%M%S')}-{command}-{label}"


def write_run_info(run_dir: Path, info: RunInfo) -> None:
    atomic_write_text(run_dir / RUN_FILE, info.model_dump_json(indent=2))


def read_run_info(path: Path) -> RunInfo:
    """run.json of the run containing `path` (searched upwards)."""
    for d in [path, *path.parents]:
        f = d / RUN_FILE
        if f.is_file():
            return RunInfo.model_validate_json(f.read_text())
    raise RunDirError(f"{path} is not inside a meta-agent run directory (no {RUN_FILE} above it)")


def run_root(path: Path) -> Path:
    for d in [path, *path.parents]:
        if (d / RUN_FILE).is_file():
            return d
    raise RunDirError(f"{path} is not inside a meta-agent run directory (no {RUN_FILE} above it)")
