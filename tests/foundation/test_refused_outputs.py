"""What a sandbox leaves on disk is plain data, refused or not: a link or a `meta_agent` package planted in an
output or a workdir is removed, so `python -m meta_agent` started in that folder later runs meta-agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import git
import pytest

from meta_agent.gitops import export_tree
from meta_agent.harness_runner import HarnessError, HarnessRunner
from sandboxes import Sandbox

PLANT = """
import os
os.makedirs("{out}/meta_agent", exist_ok=True)
open("{out}/meta_agent/__init__.py", "w").write("raise SystemExit('PLANTED CODE RAN')")
os.symlink("harness", "meta_agent")
os.symlink("/etc/hostname", "{out}/notes.txt")
open("{out}/log.txt", "w").write("kept")
"""


def test_planted_packages_and_links_are_removed_from_outputs_and_workdirs(
        math_harness: git.Repo, sandbox: Sandbox, tmp_path: Path) -> None:
    work = export_tree(math_harness, "main", tmp_path / "work")
    out = tmp_path / "out"
    with HarnessRunner(sandbox, work, commit="x", writable=[out]) as runner:
        result = runner.session.run([sys.executable, "-c", PLANT.format(out=out.resolve())], timeout=60)
        assert result.ok, result.describe_failure()
        with pytest.raises(HarnessError, match=r"unsafe entries in sandbox output \(removed\)"):
            runner._audit("train")
    assert not (out / "meta_agent").exists() and not (out / "notes.txt").is_symlink()
    assert (out / "log.txt").read_text() == "kept", "the harness's plain output stays for the user to read"
    assert not (work / "meta_agent").is_symlink(), "the workdir is scrubbed when the session closes"
    for folder in (out, work):
        done = subprocess.run([sys.executable, "-m", "meta_agent", "--version"], cwd=folder, capture_output=True,
                              text=True, timeout=120)
        assert "PLANTED" not in done.stdout + done.stderr and done.returncode == 0, done.stderr
