"""The SWE domain's sealed instances (ids, gold patches, FAIL_TO_PASS lists) are nowhere a harness session can
read; the session is opened exactly as a training run opens it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from meta_agent.domains.settings import SweSettings
from meta_agent.domains.swe import SweDomain
from meta_agent.gitops import export_tree, init_harness
from meta_agent.harness_runner import HarnessRunner
from meta_agent.sealed import SECRET_ENV
from meta_agent.training import policy_mounts, write_train_tasks
from sandboxes import Limits, Sandbox
from tests.foundation.test_sealed_view import SCAN

pytestmark = pytest.mark.slow  # searches the whole sandbox filesystem


def test_no_sealed_swe_instance_is_readable_in_a_harness_session(calc_taskset: str, tmp_path: Path,
                                                                  sandbox: Sandbox, tiny_policy: Path) -> None:
    domain = SweDomain(SweSettings(taskset=calc_taskset, sandbox=os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")))
    tasks_file = write_train_tasks(domain, tmp_path / "inputs")
    sealed = [inst for split in ("selection", "test") for inst in domain.instances(split)]  # type: ignore[arg-type]
    assert sealed
    needles = [os.environ[SECRET_ENV]]
    for inst in sealed:
        needles += [inst.instance_id, json.dumps(inst.FAIL_TO_PASS)]
        needles += [line for line in inst.patch.splitlines() if line.startswith("@@")]  # hunk headers: unique per bug
    (tmp_path / "inputs" / "needles.txt").write_text("\n".join(needles) + "\n")
    repo = init_harness(tmp_path / "harness", "swe")
    work = export_tree(repo, repo.commit("main").hexsha, tmp_path / "work")
    readable = [tasks_file.parent, *policy_mounts(tiny_policy, tiny_policy)]
    with HarnessRunner(sandbox, work, commit="c", readable=readable, writable=[tmp_path / "out"],
                       limits=Limits(memory_mb=2048, timeout_s=900)) as h:
        result = h.session.run([sys.executable, "-c", SCAN, str(tmp_path / "inputs" / "needles.txt")], timeout=900)
    assert result.exit_code == 0, result.stderr[-2000:]
    assert int(result.stdout.split("readable", 1)[1].split()[0]) > 1000
    hits = [line for line in result.stdout.splitlines() if line.startswith("HIT")]
    assert not hits, "\n".join(hits[:20])
