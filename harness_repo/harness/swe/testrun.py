"""Running an instance's tests on a diff: fresh checkout, apply, pytest on the named tests."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.swe import repo

_SUMMARY = re.compile(r"^(SUB)?(PASSED|FAILED|ERROR|XFAIL|XPASS)\b")
_WORD = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "XFAIL": "xfailed", "XPASS": "xpassed"}
FAILING = ("failed", "error")
_CACHE: dict[tuple[str, str, bool], dict[str, Any]] = {}


def parse_outcomes(text: str, node_ids: list[str], exit_code: int) -> dict[str, str]:
    """node id -> outcome from pytest's `-rA` summary and exit status; a test with any failing line fails.

    A failed unittest subTest prints `SUBFAILED(...) id` and then the test's own `PASSED id`:
    the failure wins. When the exit status contradicts the lines (exit 1 with nothing failing,
    exit 0 with a failure, or pytest could not run the tests), every test counts as an error.
    """
    seen: dict[str, str] = {}
    for line in text.splitlines():
        m = _SUMMARY.match(line)
        if not m:
            continue
        node = next((n for n in node_ids if f" {n} - " in f"{line} - "), None)
        if node is None or seen.get(node) in FAILING:
            continue
        outcome = _WORD[m.group(2)]
        if m.group(1) and outcome not in FAILING:
            continue  # a passing subtest says nothing about its test
        seen[node] = outcome
    outcomes = {n: seen.get(n, "missing") for n in node_ids}
    failing = any(o in FAILING for o in outcomes.values())
    if exit_code in (2, 3, 4) or (exit_code == 0 and failing) or (exit_code == 1 and not failing):
        return dict.fromkeys(node_ids, "error")
    return outcomes


def run_pytest(checkout: Path, node_ids: list[str], meta: dict[str, Any], timeout: float) -> dict[str, str]:
    """node id -> outcome (passed/failed/error/xfailed/xpassed/missing/timeout) for one pytest run."""
    if not node_ids:
        return {}
    env = {"PATH": "/usr/bin:/bin", "HOME": str(checkout), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": ":".join(str(checkout / p) for p in meta.get("python_path", ["."]))}
    cmd = [sys.executable, "-m", "pytest", "-rA", "-q", "-p", "no:cacheprovider", "--no-header",
           *meta.get("pytest_args", []), *node_ids]
    try:
        res = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict.fromkeys(node_ids, "timeout")
    return parse_outcomes(res.stdout, node_ids, res.returncode)


def evaluate(task: dict[str, Any], patch: str, tasks_dir: Path, timeout: float,
             restore_tests: bool = False) -> dict[str, Any]:
    """Apply `patch` to a fresh checkout and run FAIL_TO_PASS + PASS_TO_PASS.

    restore_tests=True puts the original test files back before running (a patch cannot pass by
    editing the tests). Results are cached per (task, patch, mode): replays re-score cheaply.
    """
    key = (task["id"], hashlib.sha256(patch.encode()).hexdigest(), restore_tests)
    if key in _CACHE:
        return _CACHE[key]
    meta = task["metadata"]
    f2p, p2p = list(meta.get("fail_to_pass", [])), list(meta.get("pass_to_pass", []))
    result: dict[str, Any] = {"applies": True, "f2p_total": len(f2p), "p2p_total": len(p2p), "f2p_passed": 0,
                              "p2p_failed": 0, "syntax_error": False}
    if not patch.strip():
        result["f2p_passed"] = 0  # the base fails every FAIL_TO_PASS test by construction
        _CACHE[key] = result
        return result
    with tempfile.TemporaryDirectory(prefix="swe-test-") as tmp:
        checkout = repo.checkout(task, tasks_dir, Path(tmp) / "repo")
        applied, message = repo.apply(checkout, patch)
        result["applies"] = applied
        if not applied:
            result["apply_error"] = message[:300]
        else:
            if restore_tests:
                repo.restore(checkout, [f for f in repo.touched_files(patch) if repo.is_test_file(f)])
            result["syntax_error"] = _syntax_error(checkout, repo.touched_files(patch))
            outcomes = run_pytest(checkout, f2p + p2p, meta, timeout)
            result["f2p_passed"] = sum(1 for t in f2p if outcomes[t] == "passed")
            result["p2p_failed"] = sum(1 for t in p2p if outcomes[t] != "passed")
    _CACHE[key] = result
    return result


def _syntax_error(checkout: Path, files: list[str]) -> bool:
    for rel in files:
        path = checkout / rel
        if path.suffix == ".py" and path.is_file():
            try:
                compile(path.read_text(errors="replace"), rel, "exec")
            except SyntaxError:
                return True
    return False
