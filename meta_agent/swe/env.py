"""The test environment of a project: a venv holding pytest (pinned) and the project's extra deps, nothing else.

That is what a user's venv for the project holds, so a test passes or fails here as it would
there: meta-agent's own packages (numpy, pandas, torch ...) are not importable, and a test that
starts `python -m pkg` in a subprocess gets the same venv. The venv is made once per
requirement list: the empty venv on the host, then pip (the registry's ordinary client) in a
sandbox session with the network on, since installing a package runs its code (swe/pip_sandbox.py);
the sessions that run tests (no network) mount it read-only. The checkout itself goes on PYTHONPATH,
as with an editable install.
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
from meta_agent.swe.pip_sandbox import host_python, run_pip
from sandboxes import Mount, Sandbox

PYTEST_REQUIREMENT = "pytest==9.2.0"
"""The pytest every SWE test run uses: pinned, so two machines grade the same tests the same way."""


def envs_dir() -> Path:
    """Resolved: a sandbox binds a mount at its real path, which is the path commands must use."""
    return (cache_dir() / "swe" / "envs").resolve()


def env_requirements(deps: list[str]) -> list[str]:
    return [PYTEST_REQUIREMENT, *sorted(deps)]


def project_env(deps: list[str], sandbox: Sandbox) -> Path:
    """The venv (made now if missing) with pytest and `deps`; run its `bin/python` (in a sandbox only)."""
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
        made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], capture_output=True,
                              text=True, timeout=300)
        if made.returncode != 0:
            raise SweTaskError(f"could not create the venv {target} (exit {made.returncode}): {made.stderr[-500:]}")
        try:
            run_pip(sandbox, host_python(), ["--python", str(env_python(target)), "install", "--quiet",
                                             "--no-compile", *reqs], workdir=target,
                    what=f"the test environment ({', '.join(reqs)})")
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        (target / ".complete").write_text("\n".join(reqs) + "\n")
    return target


def env_python(env: Path) -> Path:
    return env / "bin" / "python"


def env_mounts(env: Path) -> list[Mount]:
    return [Mount(env, read_only=True)]
