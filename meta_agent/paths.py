"""Where meta-agent keeps things: user cache/data dirs and the shipped templates."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

PACKAGE_DIR = Path(__file__).resolve().parent
_SOURCE_ROOT = PACKAGE_DIR.parent


def cache_dir() -> Path:
    """Converted models, built task sets. Override with META_AGENT_CACHE."""
    return Path(os.environ.get("META_AGENT_CACHE") or platformdirs.user_cache_dir("meta-agent"))


def data_dir() -> Path:
    """The user-level skills library and other state that outlives a project. Override with META_AGENT_DATA."""
    return Path(os.environ.get("META_AGENT_DATA") or platformdirs.user_data_dir("meta-agent"))


def _shipped(name: str) -> Path:
    # A source checkout (editable install) has the folder beside the package; a wheel has it under _data/.
    for candidate in (_SOURCE_ROOT / name, PACKAGE_DIR / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"meta-agent installation is incomplete: no {name}/ folder found")


TEMPLATE_ENV = "META_AGENT_HARNESS_TEMPLATE"


def harness_template() -> Path:
    """What a new harness repo starts from: the shipped harness_repo/, or a directory laid out like it (your
    team's own harness: `harness/`, `configs/<domain>.yaml`, `tests/`) named by META_AGENT_HARNESS_TEMPLATE.
    Only new repos read it (`init`, a run's first start, a skill's trial on a fresh harness): a run's own
    repo, once made, is what it trains."""
    given = os.environ.get(TEMPLATE_ENV)
    if given:
        path = Path(given)
        if not (path / "harness" / "__main__.py").is_file() or not (path / "configs").is_dir():
            raise FileNotFoundError(f"{TEMPLATE_ENV}={given} is not a harness template: it needs harness/__main__.py "
                                    "and configs/<domain>.yaml, as the shipped harness_repo/ has")
        return path
    return _shipped("harness_repo")


def seed_skills() -> Path:
    return _shipped("skills_library")
