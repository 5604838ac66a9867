"""pip runs only inside a sandbox: installing or even downloading a package runs that package's code.

An sdist's `setup.py` (or its build backend) runs when pip prepares its metadata, in `pip download`
as in `pip install`, and a wheel may drop a `.pth` file that runs in every later interpreter of the
venv. The packages come from task files and `--from-pypi` names, i.e. from outside, so every pip
command meta-agent issues for them runs in a sandbox session whose only writable directory is the
target (the venv, or the download folder), with the network on (the registry) and nothing else of
the host visible. What the trusted side does itself is limited to creating an empty venv
(`python -m venv`: the standard library, no third-party code) and writing the `.complete` marker.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from meta_agent.swe.errors import SweTaskError
from sandboxes import Limits, Mount, RunResult, Sandbox

PIP_LIMITS = Limits(memory_mb=4096, cpus=2.0, pids=256, timeout_s=1800.0)
FORWARDED_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
"""Proxy settings pass through (the registry may only be reachable through them); so do `PIP_*` settings."""


def _pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in FORWARDED_ENV}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _config_mounts(env: dict[str, str]) -> list[Mount]:
    """Local files and folders pip's own settings name (a CA bundle, a config file, local wheel folders)."""
    paths: set[Path] = set()
    for key in ("PIP_CERT", "PIP_CONFIG_FILE", "PIP_FIND_LINKS", "PIP_CONSTRAINT"):
        for item in env.get(key, "").split():
            path = Path(item.removeprefix("file://"))
            if path.is_absolute() and path.exists() and not str(path).startswith(("/usr", "/etc")):
                paths.add(path.resolve())
    return [Mount(p) for p in sorted(paths)]


def run_pip(sandbox: Sandbox, python: Path, args: Sequence[str], *, workdir: Path, mounts: Sequence[Mount] = (),
            what: str) -> RunResult:
    """`python -m pip ARGS` in a sandbox session on `workdir` with the network on; SweTaskError on failure.

    `what` names the job in the error ("the test environment (pytest==9.2.0, six)")."""
    env = _pip_env()
    session_mounts = [*mounts, *_config_mounts(env)]
    with sandbox.open(workdir, mounts=session_mounts, limits=PIP_LIMITS, network=True) as session:
        result = session.run([str(python), "-m", "pip", *args], env=env, cwd=workdir)
    if not result.ok:
        raise SweTaskError(f"could not make {what} with pip in the sandbox ({sandbox.name}): "
                           f"{result.describe_failure(tail_lines=8)}\nCheck the requirement names and that the "
                           f"package registry is reachable (`meta-agent sandbox doctor` says whether {sandbox.name} "
                           f"sessions get a network).")
    return result


def host_python() -> Path:
    """The interpreter pip runs under (mounted read-only in every session)."""
    return Path(sys.executable)
