"""`tasks verify`: re-run instances with plain pytest in a fresh venv, outside meta-agent's test runner.

An independent check of the builder and of the runner's grading: for each instance the
buggy tree and the gold-patched tree are tested by `python -m pytest` from a venv made
from the project's sdist (plus the pinned pytest and the instance's deps),
the checkout first on PYTHONPATH as with an editable install. Per-test outcomes come from
pytest's own JUnit XML report. The instance agrees when every FAIL_TO_PASS test fails on
the buggy tree, every PASS_TO_PASS test passes there, and all of them pass with the gold patch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel, Field

from meta_agent.paths import cache_dir
from meta_agent.swe.checkout import checkout
from meta_agent.swe.env import env_requirements
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.pip_sandbox import run_pip
from meta_agent.swe.sdist import check_pin, fetch_sdist
from meta_agent.swe.testrun import test_file_of
from meta_agent.swe.verdict import EVAL_LIMITS, apply_diff
from sandboxes import Mount, Sandbox


class CrossCheck(BaseModel):
    """What plain pytest said about one instance."""

    instance_id: str
    problems: list[str] = Field(default_factory=list)
    """Each disagreement with the instance's FAIL_TO_PASS / PASS_TO_PASS, in words; empty when it agrees."""
    skipped: str = ""
    """Why the instance could not be checked (no local repository, the venv could not be made)."""
    seconds: float = 0.0


def verify_envs_dir() -> Path:
    """Resolved: a sandbox binds the venv at its real path, which is the path the commands must use."""
    return (cache_dir() / "swe" / "verify-envs").resolve()


def _sdist_name(instance: SweInstance) -> str | None:
    """The PyPI name of a built instance's project (`pypi/<name>-<version>`); None for other repos."""
    owner, _, rest = instance.repo.partition("/")
    suffix = f"-{instance.version}"
    if owner != "pypi" or not instance.version or not rest.endswith(suffix):
        return None
    name = rest[: -len(suffix)]
    check_pin(name, instance.version)  # the task file names it: never a pip option, path or URL
    return name


def venv_for(instance: SweInstance, sandbox: Sandbox, log: Callable[[str], None] = lambda _: None) -> Path:
    """A venv (cached) with the project's sdist installed, the pinned pytest and the instance's deps.

    Only the empty venv is made on the host; pip (which builds the sdist: the project's code) runs in
    `sandbox` with the venv as its one writable directory (swe/pip_sandbox.py)."""
    name = _sdist_name(instance)
    reqs = env_requirements(instance.test_setup().deps)
    project = f"{name}-{instance.version}" if name else "no-sdist"
    key = hashlib.sha256(json.dumps([project, sorted(reqs)]).encode()).hexdigest()[:12]
    target = verify_envs_dir() / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', project)}-{key}"
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{target}.lock"):
        if (target / ".complete").is_file():
            return target
        log(f"making a venv for {project}: {', '.join(reqs)}{' and the sdist' if name else ''}")
        shutil.rmtree(target, ignore_errors=True)
        mounts = []
        if name is not None:
            archive = fetch_sdist(name, instance.version, sandbox=sandbox)
            reqs.insert(0, str(archive))
            mounts.append(Mount(archive.parent))
        made = subprocess.run([sys.executable, "-m", "venv", str(target)], capture_output=True, text=True,
                              timeout=600)
        if made.returncode != 0:
            raise SweTaskError(f"could not make the verify venv for {instance.repo} "
                               f"(`python -m venv` exit {made.returncode}): {made.stderr[-500:]}")
        try:
            run_pip(sandbox, target / "bin" / "python", ["install", "--quiet", *reqs], workdir=target, mounts=mounts,
                    what=f"the verify venv for {instance.repo}")
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        (target / ".complete").write_text("\n".join(reqs) + "\n")
    return target


def junit_names(nodeid: str) -> tuple[str, str]:
    """(classname, name) of a node id in pytest's JUnit XML (pytest's own mangling of test addresses)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def read_junit(path: Path) -> dict[tuple[str, str], str]:
    """(classname, name) -> passed | failed | skipped; any failure or error element fails the test case."""
    try:
        cases = list(ET.parse(path).iter("testcase"))
    except (OSError, ET.ParseError):
        return {}  # pytest never got to write it (usage error, crash): every test is missing
    outcomes: dict[tuple[str, str], str] = {}
    for case in cases:
        tags = {child.tag for child in case}
        outcome = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        key = (case.get("classname", ""), case.get("name", ""))
        if outcomes.get(key) != "failed":
            outcomes[key] = outcome
    return outcomes


def plain_pytest(venv: Path, root: Path, instance: SweInstance, sandbox: Sandbox) -> dict[str, str]:
    """node id -> passed | failed | skipped | missing for the instance's tests, run by plain pytest in `root`.

    The test files holding the instance's tests are run whole (node ids on a command line are
    not always addressable), in the sandbox with the venv mounted read-only.
    """
    setup = instance.test_setup()
    tests = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    files = sorted({test_file_of(t) for t in tests})
    with sandbox.open(root, mounts=[Mount(venv)], limits=EVAL_LIMITS) as session:
        junit = session.scratch / "junit.xml"
        cmd = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-o", "addopts=", f"--rootdir={root}",
               f"--junitxml={junit}", *setup.pytest_args, "--", *files]
        env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(venv),
               "PYTHONPATH": os.pathsep.join(os.path.normpath(root / p) for p in setup.python_path)}
        result = session.run(cmd, timeout=setup.timeout_s, cwd=root, env=env)
        if result.timed_out:
            return dict.fromkeys(tests, "timeout")
        seen = read_junit(junit)
    if not seen:
        tail = "\n".join((result.stdout + "\n" + result.stderr).strip().splitlines()[-6:])
        raise SweTaskError(f"plain pytest ran no test (exit {result.exit_code}):\n{tail}")
    return {t: seen.get(junit_names(t), "missing") for t in tests}


def cross_check(instance: SweInstance, sandbox: Sandbox, log: Callable[[str], None] = lambda _: None) -> CrossCheck:
    """Plain pytest on the buggy tree and on the gold-patched tree, compared with the instance's lists."""
    start = time.monotonic()
    check = CrossCheck(instance_id=instance.instance_id)
    if instance.image is not None:
        check.skipped = (f"runs in its image {instance.image}, graded there by swebench's code or its Harbor "
                         "verifier: plain pytest in a venv of ours would not be its environment")
        return check
    tmp = Path(tempfile.mkdtemp(prefix="meta-agent-swe-verify-")).resolve()
    try:
        venv = venv_for(instance, sandbox, log)
        trees = {}
        tests_diff = {"test_patch": instance.test_patch}
        for label, diffs in (("under the bug", tests_diff),
                             ("with the gold patch", {"gold patch": instance.patch, **tests_diff})):
            root = checkout(instance, tmp / label.replace(" ", "-"))
            for what, diff in diffs.items():
                if diff.strip() and not apply_diff(root, diff)[0]:
                    raise SweTaskError(f"the {what} does not apply to a fresh checkout")
            trees[label] = plain_pytest(venv, root, instance, sandbox)
        bug, gold = trees["under the bug"], trees["with the gold patch"]
        check.problems += [f"FAIL_TO_PASS {t} is {bug[t]} under the bug" for t in instance.FAIL_TO_PASS
                           if bug[t] != "failed"]
        check.problems += [f"PASS_TO_PASS {t} is {bug[t]} under the bug" for t in instance.PASS_TO_PASS
                           if bug[t] != "passed"]
        check.problems += [f"{t} is {gold[t]} with the gold patch" for t in gold if gold[t] != "passed"]
    except SweTaskError as e:
        check.skipped = str(e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        check.seconds = time.monotonic() - start
    return check


def sample(instances: list[SweInstance], n: int | None, seed: int) -> list[SweInstance]:
    """`n` instances in a seeded order that takes one project after another, so a sample spans projects."""
    def rank(i: SweInstance) -> str:
        return hashlib.sha256(f"{seed}:{i.instance_id}".encode()).hexdigest()

    by_project: dict[str, list[SweInstance]] = {}
    for inst in sorted(instances, key=rank):
        by_project.setdefault(inst.project, []).append(inst)
    queues = [by_project[p] for p in sorted(by_project)]
    out: list[SweInstance] = []
    while any(queues):
        out += [q.pop(0) for q in queues if q]
    return out if n is None else out[:n]
