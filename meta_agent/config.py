"""Settings of every command, as pydantic models whose fields document themselves.

The CLI builds these from its options; `--config FILE` (YAML) supplies defaults for
any field, and options given on the command line win.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from meta_agent.domains.math import MathSettings
from sandboxes import Limits

DomainName = Literal["math", "code", "swe"]


class ConfigFileError(ValueError):
    """A --config file is unreadable or has an invalid field."""


class SandboxSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: Literal["auto", "docker", "bwrap", "process"] = Field(
        "auto", description="auto = docker if an engine answers, else bwrap; process = no isolation (explicit only)"
    )
    memory_mb: int = Field(12_000, ge=256, description="memory cap for everything one harness command starts")
    cpus: float = Field(2.0, gt=0, description="CPU quota in cores")
    pids: int = Field(1024, ge=16, description="process/thread cap (stops fork bombs)")
    train_timeout_s: float = Field(4 * 3600, gt=0, description="wall-time limit of one `harness train`")
    step_timeout_s: float = Field(900, gt=0, description="wall-time limit of replay/diagnose/selftest")

    def limits(self) -> Limits:
        return Limits(memory_mb=self.memory_mb, cpus=self.cpus, pids=self.pids, timeout_s=self.step_timeout_s)


class RolloutConfig(BaseModel):
    """`meta-agent rollout`: train the policy N steps under a harness and report on the rollouts."""

    model_config = ConfigDict(extra="forbid")
    domain: DomainName = "math"
    harness: Path | None = Field(None, description="harness git repo; default: a fresh one inside the run dir")
    policy: str | None = Field(None, description="smollm2 (default), tiny, or a local model/checkpoint dir")
    steps: int = Field(4, ge=1, description="GRPO optimizer steps")
    seed: int = 0
    run_dir: Path | None = Field(None, description="default: runs/<timestamp>-rollout-<domain>")
    sandbox: SandboxSettings = SandboxSettings()
    math: MathSettings = MathSettings()


def load_config_file(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigFileError(f"cannot read config file {path}: {e}") from e
    if not isinstance(data, dict):
        raise ConfigFileError(f"config file {path} must be a mapping of settings")
    return data


def build(model: type[BaseModel], file_values: dict[str, Any], cli_values: dict[str, Any]) -> Any:
    """File values overlaid by the options actually given on the command line (None = not given)."""
    merged = {**file_values, **{k: v for k, v in cli_values.items() if v is not None}}
    try:
        return model.model_validate(merged)
    except ValidationError as e:
        lines = [f"invalid setting for {model.__name__}:"]
        for err in e.errors():
            lines.append(f"  {'.'.join(str(p) for p in err['loc'])}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigFileError("\n".join(lines)) from e
