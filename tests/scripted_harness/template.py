"""A harness template whose training is scripted (see train.py here): built once per test root, picked by a
run through META_AGENT_HARNESS_TEMPLATE, so the run's own repo, its branches and every stage are the real ones."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from meta_agent.paths import TEMPLATE_ENV, harness_template

HERE = Path(__file__).parent


@functools.cache
def scripted_template(root: Path) -> Path:
    """The shipped template with tests/scripted_harness/train.py as harness/train.py, under `root`: made afresh
    once per test process (the shipped template may have changed since the last session)."""
    dest = root / "scripted-harness-template"
    build = root / "scripted-harness-template.partial"
    shutil.rmtree(build, ignore_errors=True)
    shutil.copytree(harness_template(), build, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(HERE / "train.py", build / "harness" / "train.py")
    shutil.rmtree(dest, ignore_errors=True)
    build.rename(dest)
    return dest


def scripted_env(root: Path) -> dict[str, str]:
    """The environment entries that make a meta-agent process start new harness repos from the scripted one."""
    return {TEMPLATE_ENV: str(scripted_template(root))}
