"""The test environment of a project: a venv holding pytest (pinned) and the project's extra deps, nothing else.

That is what a user's venv for the project holds, so a test passes or fails here as it would
there: meta-agent's own packages (numpy, pandas, torch ...) are not importable, and a test that
starts `python -m pkg` in a subprocess gets the same venv. The venv is made once per
requirement list, on the host with network (pip, the registry's ordinary client), and sandboxes
(no network) mount it read-only; the checkout itself goes on PYTHONPATH, as with an editable
install.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from meta_agent.paths import cache_dir
from meta_agent.swe.errors import SweTaskError
from sandboxes import Mount

PYTEST_REQUIREMENT = "pytest==9.2.0"
"""The pytest every SWE test run uses: pinned, so two machines grade the same tests the same way."""


def envs_dir() -> Path:
    """Resolved: a sandbox binds a mount at its real path, which is the path commands must use."""
    return (cache_dir() / "swe" / "envs").resolve()


def env_requirements(deps: list[str]) -> list[str]:
    return [PYTEST_REQUIREMENT, *sorted(deps)]


def project_env(deps: list[str]) -> Path:
    """The venv (made now if missing) with pytest and `deps`; run its `bin/python`."""
    reqs = env_requirements(deps)
    key = hashlib.sha256("\n".join(reqs).encode()).hexdigest()[:16]
    target = envs_dir() / f"venv-{key}"
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{target}.lock"):
        if (target / ".complete").is_file():
            return target
        shutil.rmtree(target, ignore_errors=True)  # a half-made venv from a killed run
        steps = [[sys.executable, "-m", "venv", "--without-pip", str(target)],
                 [sys.executable, "-m", "pip", "--python", str(env_python(target)), "install", "--quiet",
                  "--no-compile", "--disable-pip-version-check", *reqs]]
        for cmd in steps:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                shutil.rmtree(target, ignore_errors=True)
                tail = "\n".join(done.stderr.strip().splitlines()[-8:])
                raise SweTaskError(f"could not make the test environment ({', '.join(reqs)}) with pip "
                                   f"(exit {done.returncode}); check the --deps names and that the package "
                                   f"registry is reachable:\n{tail}")
        (target / ".complete").write_text("\n".join(reqs) + "\n")
    return target


def env_python(env: Path) -> Path:
    return env / "bin" / "python"


def env_mounts(env: Path) -> list[Mount]:
    return [Mount(env, read_only=True)]
