"""The `auto` backend choice: docker when an engine answers and the image is built, else bwrap.

It never picks `process` (no isolation): when neither works it raises, saying what to
install. Each probe returns what a user needs to know, so `sandbox doctor` reuses them.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from sandboxes.base import SandboxError


@dataclass(frozen=True)
class Availability:
    backend: str
    usable: bool
    detail: str
    """What was found, or what is missing."""
    fix: str = ""
    """What to do to make it usable; empty when it is."""


def docker_availability() -> Availability:
    """Usable when an engine answers and the harness image for the current definitions is built."""
    from sandboxes.engine import START_HINT, docker_client, engine_status
    from sandboxes.image import image_exists, image_tag

    status = engine_status()
    if not status.answers:
        if shutil.which("dockerd") is None:
            return Availability(
                "docker", False, status.detail, "install it (Debian/Ubuntu: `apt-get install docker.io`)"
            )
        return Availability("docker", False, status.detail, START_HINT)
    tag = image_tag()
    client = docker_client()
    try:
        built = image_exists(client, tag)
    finally:
        client.close()
    if not built:
        return Availability(
            "docker", False, f"{status.detail}, but image {tag} is not built", "run `meta-agent sandbox build-image`"
        )
    return Availability("docker", True, f"{status.detail}, image {tag}")


def bwrap_availability() -> Availability:
    """Usable when bwrap exists and can create its namespaces here."""
    from sandboxes.bwrap import INSTALL_HINT
    from sandboxes.cgroups import describe

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Availability("bwrap", False, "bwrap is not installed", INSTALL_HINT)
    probe = subprocess.run(
        [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--", "true"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        return Availability(
            "bwrap",
            False,
            f"bwrap cannot create namespaces: {probe.stderr.strip()}",
            "run as root or enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)",
        )
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    return Availability("bwrap", True, f"{version}; cgroups: {describe()}")


def choose_backend() -> tuple[str, str]:
    """(backend name, why) for `auto`; SandboxError when no isolating backend works here."""
    docker = docker_availability()
    if docker.usable:
        return "docker", docker.detail
    bwrap = bwrap_availability()
    if bwrap.usable:
        return "bwrap", f"docker is not usable ({docker.detail}); {bwrap.detail}"
    raise SandboxError(
        "no isolating sandbox backend works here.\n"
        f"  docker: {docker.detail} -> {docker.fix}\n"
        f"  bwrap: {bwrap.detail} -> {bwrap.fix}\n"
        "The 'process' backend gives no isolation and is never picked automatically; "
        "request it by name only if you accept running untrusted code unconfined."
    )
