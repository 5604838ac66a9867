"""Loads the domain module named in harness.yaml (harness/math, harness/code, harness/swe)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Protocol, cast

from harness.rollout import Rollout


class DomainModule(Protocol):
    """What every harness/<domain>/__init__.py exposes."""

    REWARDS: dict[str, Any]
    """name -> fn(Rollout) -> float"""
    DIAGNOSTICS: dict[str, Any]
    """label -> fn(Rollout) -> bool"""

    def build_messages(self, task: dict[str, Any]) -> list[dict[str, str]]: ...


def load_domain(name: str) -> DomainModule:
    try:
        module: ModuleType = importlib.import_module(f"harness.{name}")
    except ModuleNotFoundError as e:
        raise SystemExit(f"harness.yaml names domain {name!r} but harness/{name}/ is missing: {e}") from e
    return cast(DomainModule, module)


def reward_components(domain: DomainModule, weights: dict[str, float], r: Rollout) -> dict[str, float]:
    """Each configured reward component's value for one rollout."""
    missing = sorted(set(weights) - set(domain.REWARDS))
    if missing:
        raise SystemExit(
            f"harness.yaml rewards name unknown components {missing}; defined: {sorted(domain.REWARDS)}"
        )
    return {name: float(domain.REWARDS[name](r)) for name in weights}
