"""What a candidate's diff touches, read from git: the parts the replay stage can see, and the rest.

The replay re-scores stored rollouts, so it sees what rewards, reward weights and diagnostics do. It
cannot see the settings and code that decide how the policy trains: RL settings, the policy and its
adapter, prompts, the rollout scaffold, filters and curriculum, the trainer. A change the replay
measures as a validity fix or a diagnostic, but whose diff also reaches that part, is judged as what
it also is: a performance change (the gate, `backtest/gate.py`).
"""

from __future__ import annotations

import fnmatch
from typing import Literal

import git
import yaml
from pydantic import BaseModel, Field

from meta_agent.gitops import changed_paths

Surface = Literal["replayed", "training", "other"]

REPLAYED_PATHS = (
    "harness/*/rewards.py", "harness/*/answers.py", "harness/*/diagnostics.py", "harness/diagnostics.py",
    "harness/scoring.py",
    "harness/code/execution.py", "harness/code/extract.py", "harness/code/hardcoding.py", "harness/code/runner.py",
    "harness/code/spec.py", "harness/swe/testrun.py", "harness/swe/repo.py",
)
"""Code the replay runs when it re-scores a rollout: rewards, what they parse and execute, diagnostics."""
INERT_PATHS = ("tests/*", "*.md", ".gitignore")
"""Neither trained nor replayed: the harness's own tests (selftest runs them) and its documentation."""
REPLAYED_SETTINGS = ("rewards",)
"""Top-level harness.yaml keys the replay applies (reward weights); every other key is a training setting."""
HARNESS_YAML = "harness.yaml"


class ChangeSurfaces(BaseModel):
    """Where a candidate's diff lands, by what can judge it."""

    replayed: list[str] = Field(default_factory=list, description="paths (and harness.yaml keys) the replay runs")
    training: list[str] = Field(default_factory=list, description="paths and harness.yaml keys only training sees")

    def describe_training(self) -> str:
        return ", ".join(self.training[:6]) + (f" and {len(self.training) - 6} more" if len(self.training) > 6 else "")


def _yaml(repo: git.Repo, commit: str) -> dict[str, object]:
    try:
        data = yaml.safe_load(repo.git.show(f"{commit}:{HARNESS_YAML}"))
    except (git.GitCommandError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {"<not a mapping>": data}


def _settings_changed(before: dict[str, object], after: dict[str, object], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ, one level into each top-level section."""
    changed = []
    for key in sorted(set(before) | set(after), key=str):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if not prefix and isinstance(old, dict) and isinstance(new, dict):
            changed += _settings_changed(old, new, f"{key}.")
        else:
            changed.append(f"{prefix}{key}")
    return changed


def classify(repo: git.Repo, base: str, head: str) -> ChangeSurfaces:
    """The surfaces `head` changes relative to `base`."""
    out = ChangeSurfaces()
    for path in changed_paths(repo, base, head):
        if path == HARNESS_YAML:
            for key in _settings_changed(_yaml(repo, base), _yaml(repo, head)):
                where = out.replayed if key.split(".")[0] in REPLAYED_SETTINGS else out.training
                where.append(f"{HARNESS_YAML}: {key}")
        elif any(fnmatch.fnmatch(path, pattern) for pattern in REPLAYED_PATHS):
            out.replayed.append(path)
        elif not any(fnmatch.fnmatch(path, pattern) for pattern in INERT_PATHS):
            out.training.append(path)
    return out
