"""Harbor tasks as a task source: a directory of Harbor tasks becomes a task set.

A Harbor task (`task.toml`, `instruction.md`, `environment/`, `tests/`, `solution/`) is read by Harbor's own
code (`harbor_reader.py`, run by the interpreter of Harbor's tool venv: Harbor needs Python >= 3.12), then kept
as an image instance: the image is the task's `docker_image` or is built from its `environment/` directory;
the statement is its instruction; the policy works in the image's working directory (`[environment].workdir`,
else the image's WORKDIR), as every image episode does (`image_tree.py`, `instance_session.py`); and the reward
is what its verifier (`tests/test.sh`) writes to /logs/verifier/reward.txt, run after the episode in a fresh
container of the image on the episode's changes (`image_verdict.py`). The task's files are copied into the task
cache: `tests/` and `solution/` are never in a harness's inputs or an episode's container.

Where this differs from Harbor's own runner: the verifier runs as the sandbox's unprivileged uid with no network
and a read-only root (a test.sh that installs packages at verification time cannot; bake them into the image),
and only the working directory carries over from the episode to the verifier.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from meta_agent.paths import cache_dir
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import HarborSpec, Split, SweInstance

PYTHON_ENV = "META_AGENT_HARBOR_PYTHON"
TOOL_VENV = Path(__file__).resolve().parents[2] / ".venv-harbor"
READER = Path(__file__).with_name("harbor_reader.py")
READ_TIMEOUT_S = 600.0
MAX_TASKS = 10_000


def harbor_python() -> Path:
    """The interpreter that has Harbor installed; SweTaskError saying how to get one."""
    given = os.environ.get(PYTHON_ENV)
    candidate = Path(given) if given else TOOL_VENV / "bin" / "python"
    if candidate.is_file() and (given or (TOOL_VENV / ".installed").is_file()):  # a half-made venv has no harbor
        return candidate
    raise SweTaskError(
        f"reading Harbor tasks needs Harbor's own code, which needs Python >= 3.12 (meta-agent runs on "
        f"{sys.version_info.major}.{sys.version_info.minor}): `make setup` makes {TOOL_VENV} when a python3.12 "
        f"is installed, or point {PYTHON_ENV} at an interpreter that has `harbor` installed"
        + (f" ({given} does not exist)" if given else ""))


def harbor_store() -> Path:
    """Where imported Harbor tasks' files are kept (the task cache)."""
    return cache_dir() / "swe" / "harbor"


def task_files(spec: HarborSpec) -> Path:
    """The task's kept files; SweTaskError unless they are in the Harbor store. A task file names this path, and
    whatever it names is mounted into containers and used as a build context: it may name nothing else."""
    path = Path(spec.task_dir).resolve()
    if not path.is_relative_to(harbor_store().resolve()) or not path.is_dir():
        raise SweTaskError(f"Harbor task files {spec.task_dir} are not in {harbor_store()}: import Harbor tasks "
                           "from their directory (`meta-agent tasks import DIR`), not as rows naming a path")
    return path


def task_dirs(root: Path) -> list[Path]:
    """`root` itself when it is one task, else its subdirectories that hold a task.toml."""
    if not root.is_dir():
        raise SweTaskError(f"{root}: not a directory of Harbor tasks")
    if (root / "task.toml").is_file():
        return [root.resolve()]
    dirs = sorted(d.resolve() for d in root.iterdir() if d.is_dir() and (d / "task.toml").is_file())
    if not dirs:
        raise SweTaskError(f"{root}: no Harbor task in it (no task.toml in it or its subdirectories)")
    if len(dirs) > MAX_TASKS:
        raise SweTaskError(f"{root}: {len(dirs)} tasks, over {MAX_TASKS}")
    return dirs


def read_tasks(dirs: list[Path]) -> list[dict[str, Any]]:
    """Harbor's reading of each task directory (see harbor_reader.py)."""
    try:
        done = subprocess.run([str(harbor_python()), "-I", str(READER), *map(str, dirs)], capture_output=True,
                              text=True, timeout=READ_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SweTaskError(f"Harbor did not read {len(dirs)} tasks within {READ_TIMEOUT_S:.0f}s") from None
    if done.returncode != 0:
        raise SweTaskError(f"Harbor's task reader failed: {done.stderr.strip()[-1500:]}")
    try:
        rows = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise SweTaskError(f"Harbor's task reader wrote no JSON ({e.msg}): {done.stdout[:300]!r}") from None
    return list(rows)


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")[:100]
    return slug or "task"


def tree_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink()):
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        digest.update((os.readlink(file).encode() if file.is_symlink() else file.read_bytes()) + b"\0")
    return digest.hexdigest()


def harbor_instances(root: Path, *, name: str, split: Split) -> list[SweInstance]:
    """The tasks under `root` as instances of task set `name`, their files copied into the task cache."""
    rows = read_tasks(task_dirs(root))
    refused = [f"{Path(r['dir']).name}: {r['error']}" for r in rows if not r.get("ok")]
    refused += [f"{Path(r['dir']).name}: multi-step tasks are not supported" for r in rows
                if r.get("ok") and r.get("steps")]
    refused += [f"{Path(r['dir']).name}: no tests/test.sh" for r in rows if r.get("ok") and not r.get("test_script")]
    refused += [f"{Path(r['dir']).name}: neither [environment].docker_image nor environment/Dockerfile"
                for r in rows if r.get("ok") and not r.get("docker_image") and not r.get("dockerfile")]
    if refused:
        raise SweTaskError(f"{len(refused)} of {len(rows)} Harbor tasks cannot be used: " + "; ".join(refused[:5]))
    store = harbor_store() / _slug(name)
    # copied beside the set's current files, which are replaced only once every task is in: a failed import
    # leaves the set as it was
    partial = store.with_name(f"{store.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        instances = _kept(rows, root, name, split, store, partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(store, ignore_errors=True)
    partial.rename(store)
    return instances


def _kept(rows: list[dict[str, Any]], root: Path, name: str, split: Split, store: Path,
          partial: Path) -> list[SweInstance]:
    """The instances of `rows`, their files copied into `partial` (named by where they will be: `store`)."""
    instances: list[SweInstance] = []
    seen: set[str] = set()
    for row in rows:
        source = Path(row["dir"])
        task_id = _slug(str(row["name"]))
        if task_id in seen:
            raise SweTaskError(f"two Harbor tasks are both named {task_id!r}")
        seen.add(task_id)
        kept = partial / task_id
        for part in ("environment", "tests"):
            if (source / part).is_dir():
                shutil.copytree(source / part, kept / part, symlinks=True)
        kept.mkdir(parents=True, exist_ok=True)
        kept.chmod(0o755)
        if row.get("docker_image") and not row.get("dockerfile"):
            image = str(row["docker_image"])
        else:
            image = f"meta-agent-harbor/{_slug(name)}.{task_id}:{tree_digest(kept / 'environment')[:12]}"
        spec = HarborSpec(task_dir=str(store / task_id), test_script=str(row["test_script"]),
                          workdir=row.get("workdir"), verifier_timeout_s=float(row.get("verifier_timeout_s") or 600.0))
        try:
            instances.append(SweInstance(
                instance_id=task_id, repo=f"harbor/{_slug(root.resolve().name)}", base_commit="", patch="",
                problem_statement=str(row["instruction"]), FAIL_TO_PASS=[spec.test_script], image=image,
                harbor=spec, split=split))
        except ValueError as e:
            raise SweTaskError(f"Harbor task {task_id}: {e}") from None
    return instances
