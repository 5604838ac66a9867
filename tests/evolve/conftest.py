from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import TEST_ROOT, TEST_SANDBOX
from tests.scripted_harness.template import scripted_env

HERE = Path(__file__).parent
E2E_SKILLS = HERE / "e2e_skills"
FAULT_SKILLS = HERE / "fault_skills"


def tiny_config(run_dir: Path, **overrides: Any) -> Path:
    """A YAML config for a small, fast evolve run on the tiny policy."""
    cfg: dict[str, Any] = {
        "domain": "math", "policy": "tiny", "generations": 2, "candidates": 2, "train_steps": 1, "seed": 0,
        "run_dir": str(run_dir), "selection_limit": 6, "test_limit": 6,
        "math": {"train_size": 24, "selection_size": 6, "test_size": 6, "eval_max_new_tokens": 6},
        "sandbox": {"backend": TEST_SANDBOX, "memory_mb": 6000, "train_timeout_s": 300},
        "skills": [str(E2E_SKILLS)],
    }
    cfg.update(overrides)
    path = run_dir.parent / f"{run_dir.name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def data_env(data_dir: Path, scripted: bool = False) -> dict[str, str]:
    """Each run gets its own user data dir: skill evidence from other tests must not steer it. `scripted`: its
    harness repo starts from the scripted-training template (tests/scripted_harness), for tests of the loop's
    logic that need a real harness, sandbox and stages but not real GRPO."""
    return {**os.environ, "META_AGENT_DATA": str(data_dir), **(scripted_env(TEST_ROOT) if scripted else {})}


def meta_agent(*args: str, data_dir: Path, timeout: float = 900,
               scripted: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_agent", *args], capture_output=True, text=True,
                          timeout=timeout, env=data_env(data_dir, scripted))


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted evolve run: the end-to-end assertions and the resume comparison both use it.
    It reports to TensorBoard (a tracker changes no decision: the resumed runs compared with it use none)."""
    run_dir = tmp_path_factory.mktemp("evolve") / "reference"
    res = meta_agent("evolve", "--config", str(tiny_config(run_dir)), "--tracker", "tensorboard",
                     data_dir=run_dir.parent / "data")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return run_dir


@pytest.fixture(scope="session")
def scripted_reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same uninterrupted run as `reference_run`, its harness on scripted training (tests/scripted_harness):
    what the tests of resume and of the executors compare their killed, fanned-out or resumed runs with."""
    run_dir = tmp_path_factory.mktemp("evolve-scripted") / "reference"
    res = meta_agent("evolve", "--config", str(tiny_config(run_dir)), data_dir=run_dir.parent / "data", scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return run_dir
