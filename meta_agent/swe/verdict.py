"""The sealed evaluator of one SWE instance: does a candidate diff fix the bug without breaking anything?

The diff is applied to a fresh checkout of base_commit; then every test file is put back
exactly as it was (edits reverted, deletions restored, new test files and conftests removed)
before FAIL_TO_PASS and PASS_TO_PASS run in a sandbox, so editing or adding tests can
never make a task pass. Only meta-agent calls this; the harness never sees it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from meta_agent.swe.checkout import checkout
from meta_agent.swe.env import env_mounts, project_env
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.layout import is_test_path, list_files
from meta_agent.swe.mutate import parse
from meta_agent.swe.testrun import PASSED, GradingError, run_tests
from sandboxes import Limits, Sandbox

EVAL_LIMITS = Limits(memory_mb=4096, cpus=1.0, pids=256)


class PatchVerdict(BaseModel):
    """The evaluator's answer for one diff on one instance."""

    instance_id: str
    resolved: bool = Field(description="every FAIL_TO_PASS and PASS_TO_PASS test passed")
    diff_applies: bool
    syntax_error: bool = Field(description="a Python file the diff changed no longer parses")
    tests_touched: bool = Field(description="the diff changed test files; they were restored before the run")
    tests: dict[str, str] = Field(default_factory=dict, description="node id -> outcome (passed, failed, ...)")
    fail_to_pass_passed: int = 0
    fail_to_pass_total: int = 0
    pass_to_pass_passed: int = 0
    pass_to_pass_total: int = 0
    changed_files: list[str] = Field(default_factory=list)
    detail: str = ""
    wall_time: float = 0.0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(root: Path) -> dict[str, str]:
    return {rel: _digest(root / rel) for rel in list_files(root)}


def apply_diff(root: Path, diff_text: str) -> tuple[bool, str]:
    """Apply a unified diff with `git apply`; (applied, error text).

    Hand-written and model-written diffs often miscount hunk lengths or carry no context
    lines, so after an exact attempt the hunks are recounted, then zero-context hunks allowed.
    """
    patch_file = root.parent / "candidate.diff"
    patch_file.write_text(diff_text if diff_text.endswith("\n") else diff_text + "\n", encoding="utf-8")
    # No repository discovery above the checkout: the diff applies to these files only.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.parent)}
    error = ""
    for extra in ([], ["--recount"], ["--recount", "--unidiff-zero"]):
        done = subprocess.run(["git", "apply", "--whitespace=nowarn", *extra, str(patch_file)], cwd=root, env=env,
                              capture_output=True, text=True, timeout=60)
        if done.returncode == 0:
            return True, ""
        error = done.stderr.strip()
    return False, error[-2000:]


def _restore_tests(root: Path, originals: dict[str, bytes], changed: list[str]) -> None:
    for rel in changed:
        if not is_test_path(rel):
            continue
        target = root / rel
        if rel in originals:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            target.unlink(missing_ok=True)
            target.write_bytes(originals[rel])
        else:
            target.unlink(missing_ok=True)


def _symlinks(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_symlink()}


def syntax_errors(root: Path, changed: list[str]) -> list[str]:
    """The changed Python files (not tests) that no longer parse, with the parser's message. A path that leads
    out of `root` (through a link a diff made) is not read: its text would reach the verdict's detail."""
    bad = []
    top = root.resolve()
    for rel in changed:
        path = root / rel
        inside = path.resolve().is_relative_to(top)
        if rel.endswith(".py") and inside and path.is_file() and not path.is_symlink() and not is_test_path(rel):
            try:
                parse(path.read_bytes(), filename=rel)
            except (SyntaxError, ValueError) as e:
                bad.append(f"{rel}: {e}")
    return bad


def evaluate_patch(instance: SweInstance, diff_text: str, sandbox: Sandbox) -> PatchVerdict:
    """Apply `diff_text` to a fresh checkout, restore the tests, run FAIL_TO_PASS + PASS_TO_PASS in `sandbox`.

    An instance with its own image runs there instead (`meta_agent/swe/image_verdict.py`), through the docker
    backend whatever `sandbox` is."""
    if instance.image is not None:
        from meta_agent.swe.image_verdict import evaluate_in_image

        return evaluate_in_image(instance, diff_text)
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="meta-agent-swe-eval-")).resolve()
    verdict = PatchVerdict(instance_id=instance.instance_id, resolved=False, diff_applies=True,
                           syntax_error=False, tests_touched=False,
                           fail_to_pass_total=len(instance.FAIL_TO_PASS),
                           pass_to_pass_total=len(instance.PASS_TO_PASS))
    try:
        root = checkout(instance, tmp / "repo")
        originals = {rel: (root / rel).read_bytes() for rel in list_files(root) if is_test_path(rel)}
        before, links = _snapshot(root), _symlinks(root)
        if diff_text.strip():
            applied, error = apply_diff(root, diff_text)
            if not applied:
                verdict.diff_applies = False
                verdict.detail = f"the diff does not apply: {error}"
                return verdict
        for rel in sorted(_symlinks(root) - links):
            # A new symlink could point at host files the evaluator would then read; it never fixes a bug.
            (root / rel).unlink()
            verdict.changed_files.append(rel)
        after = _snapshot(root)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        verdict.changed_files = sorted({*verdict.changed_files, *changed})
        verdict.tests_touched = any(is_test_path(rel) for rel in changed)
        _restore_tests(root, originals, changed)
        bad = syntax_errors(root, changed)
        if bad:
            verdict.syntax_error = True
            verdict.detail = "syntax error after the diff: " + "; ".join(bad)[:2000]
            return verdict
        if instance.test_patch.strip():
            applied, error = apply_diff(root, instance.test_patch)
            if not applied:
                verdict.detail = f"the instance's test_patch does not apply after the diff: {error}"
                return verdict
        setup = instance.test_setup()
        env = project_env(setup.deps, sandbox)
        try:
            with sandbox.open(root, mounts=env_mounts(env), limits=EVAL_LIMITS) as session:
                report = run_tests(session, root, setup, select=[*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS],
                                   timeout=setup.timeout_s, env=env)
        except GradingError as e:
            # No verdict from a run whose exit status contradicts its outcomes: never a pass.
            verdict.tests = {t: e.report.outcome(t) for t in [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]}
            verdict.detail = str(e)[:2000]
            return verdict
        verdict.tests = {t: report.outcome(t) for t in [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]}
        verdict.fail_to_pass_passed = sum(verdict.tests[t] == PASSED for t in instance.FAIL_TO_PASS)
        verdict.pass_to_pass_passed = sum(verdict.tests[t] == PASSED for t in instance.PASS_TO_PASS)
        verdict.resolved = (verdict.fail_to_pass_passed == verdict.fail_to_pass_total > 0
                            and verdict.pass_to_pass_passed == verdict.pass_to_pass_total)
        if report.timed_out:
            verdict.detail = f"the test run timed out after {setup.timeout_s:.0f}s"
        elif report.collect_errors:
            verdict.detail = "tests failed to import: " + "; ".join(report.collect_errors)[:1000]
        return verdict
    finally:
        verdict.wall_time = time.monotonic() - start
        shutil.rmtree(tmp, ignore_errors=True)
