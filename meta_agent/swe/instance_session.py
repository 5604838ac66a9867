"""A sandbox session on a fresh copy of an instance's buggy tree: where every episode of a policy acts.

Built instances: the tree exported from the local task repository, in the given sandbox, with a fresh git
repository holding it as one `base` commit (so the episode's diff is `git diff`). Instances with their own
image: a copy of the image's repository, its history cut at the base (`image_tree.py`), bound at /testbed (a
Harbor task: at its working directory) in a container of that image through the docker backend, whatever
sandbox the caller uses for the others.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from meta_agent.swe.checkout import checkout
from meta_agent.swe.instance import SweInstance
from sandboxes import Limits, Sandbox, Session

GIT = "git -c user.name=eval -c user.email=eval@localhost -c core.hooksPath=/dev/null"


def open_instance_session(instance: SweInstance, dest: Path, sandbox: Sandbox, limits: Limits) -> Session:
    """A session on a new tree of `instance` at `dest` (which must not exist); the caller closes it."""
    if instance.image is None:
        work = checkout(instance, dest)
        session = sandbox.open(work, limits=limits)
        session.run(["bash", "-c", f"{GIT} init -q && {GIT} add -A && {GIT} commit -qm base"], timeout=60)
        return session
    from meta_agent.swe.image_tree import image_env, instance_tree
    from meta_agent.swe.task_images import require_image
    from sandboxes.docker import DockerSandbox
    from sandboxes.engine import docker_client

    client = docker_client()
    try:
        image = require_image(client, instance)
        tree, workdir = instance_tree(client, instance, image)
        env = image_env(client, image)
    finally:
        client.close()
    shutil.copytree(tree, dest, symlinks=True)
    return DockerSandbox(image=image, workdir_at=Path(workdir), env=env).open(dest, limits=limits)
