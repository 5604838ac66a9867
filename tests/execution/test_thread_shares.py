"""Jobs side by side share the cores; when one ends with nothing queued, the one still running gets its cores
instead of leaving them idle (`--parallel N`).
The share reaches the harness as a read-only file it can follow between steps; a hostile value is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meta_agent import thread_share as threads
from meta_agent.execution.jobs import RunJob
from meta_agent.execution.local import LocalExecutor
from meta_agent.execution.settings import ExecutorSettings
from meta_agent.gitops import init_harness
from meta_agent.harness_runner import HarnessRunner
from meta_agent.thread_share import THREADS_FILE_ENV, ThreadShares, read_share
from tests.conftest import TEST_SANDBOX


def test_spread_gives_the_busy_slots_every_core_and_leaves_the_idle_ones_alone() -> None:
    shares = ThreadShares(3, cores=5)
    try:
        assert [read_share(shares.path(i)) for i in range(3)] == [1, 1, 1]
        shares.spread([0, 2])
        got = [int(shares.path(i).read_text()) for i in range(3)]
        assert got[0] + got[2] == 5 and sorted([got[0], got[2]]) == [2, 3]
        assert got[1] == 1
        shares.spread([2])
        assert int(shares.path(2).read_text()) == 5
        # the sandbox's unprivileged uid can read a share, and no one but the driver can write it
        assert shares.root.stat().st_mode & 0o777 == 0o755
        assert shares.path(2).stat().st_mode & 0o777 == 0o644
    finally:
        shares.close()
    assert not shares.root.exists()


@pytest.mark.parametrize("text", ["", "two", "0", "-3", "1e9", "999999", "\x00\xff", "2" * 50])
def test_a_share_that_is_not_a_sensible_thread_count_is_ignored(tmp_path: Path, text: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    path = tmp_path / "threads"
    path.write_bytes(text.encode("latin-1"))
    assert read_share(path) is None
    monkeypatch.setenv(THREADS_FILE_ENV, str(path))
    before = torch.get_num_threads()
    threads.follow_share()
    assert torch.get_num_threads() == before


def test_a_worker_follows_its_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    path = tmp_path / "threads"
    path.write_text("1\n")
    monkeypatch.setenv(THREADS_FILE_ENV, str(path))
    before = torch.get_num_threads()
    try:
        threads.follow_share()
        assert torch.get_num_threads() == 1
        path.write_text(f"{os.cpu_count()}\n")
        threads.follow_share()
        assert torch.get_num_threads() == os.cpu_count()
    finally:
        torch.set_num_threads(before)


def test_the_harness_sees_its_share_change_and_cannot_write_it(tmp_path: Path, sandbox: object,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    shares = ThreadShares(2, cores=2)
    try:
        monkeypatch.setenv(THREADS_FILE_ENV, str(shares.path(1)))  # as in worker 1
        work = tmp_path / "work"
        work.mkdir()
        runner = HarnessRunner(sandbox, work, commit="0" * 40)  # type: ignore[arg-type]
        try:
            def inside(script: str) -> str:
                result = runner.session.run(["bash", "-c", script], env=runner.service_env, timeout=60)
                return result.stdout.strip() + result.stderr.strip()

            assert inside('cat "$META_AGENT_THREADS_FILE"') == "1"
            shares.spread([1])  # its partner ended: the same session sees the new share
            assert inside('cat "$META_AGENT_THREADS_FILE"') == "2"
            inside('echo 9 > "$META_AGENT_THREADS_FILE"; echo 9 > "$(dirname "$META_AGENT_THREADS_FILE")/x"')
            assert shares.path(1).read_text() == "2\n"
            assert not (shares.path(1).parent / "x").exists()
        finally:
            runner.close()
    finally:
        shares.close()


def test_the_template_harness_follows_the_share_between_steps(tmp_path: Path) -> None:
    """The harness template's callback, run as the harness runs it (its own package, its own process)."""
    repo = init_harness(tmp_path / "harness", "math")
    share = tmp_path / "threads"
    share.write_text("2\n")
    script = (
        "import torch\n"
        "from harness.threads import FollowShare, current_share\n"
        "torch.set_num_threads(1)\n"
        "FollowShare().on_step_begin(None, None, None)\n"
        "print(torch.get_num_threads(), current_share())\n"
    )
    env = {**os.environ, THREADS_FILE_ENV: str(share), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", script], cwd=repo.working_dir, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    want = min(2, os.cpu_count() or 1)
    assert out.stdout.split() == ([str(want), "2"] if want == 2 else ["1", "None"])


@pytest.mark.slow
def test_a_job_left_running_alone_gets_the_cores_its_partner_had(tiny_policy: Path, tmp_path: Path) -> None:
    """Two sealed evaluations in two workers: the short one's result arrives while the long one still runs,
    and by then the long one's share is every core (it started with half)."""
    repo = init_harness(tmp_path / "harness", "math")
    config = {"domain": "math", "policy": "tiny", "run_dir": str(tmp_path / "run"), "reuse_across_runs": False,
              "math": {"train_size": 8, "selection_size": 200, "test_size": 4, "eval_max_new_tokens": 24,
                       "eval_batch_size": 1},
              "sandbox": {"backend": TEST_SANDBOX}}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("")

    def job(name: str, limit: int) -> RunJob:
        return RunJob(key=name, label=name, config=config, harness=repo.working_dir, root_policy=str(tiny_policy),
                      tasks_file=str(tasks), policy=str(tiny_policy), eval_split="selection",
                      eval_out=str(tmp_path / f"{name}.json"), eval_limit=limit)

    executor = LocalExecutor(ExecutorSettings(parallel=2))
    try:
        executor.warm()
        assert executor.shares is not None
        arrived = []
        for done, result in executor.run([job("short", 1), job("long", 200)], env=None):  # type: ignore[arg-type]
            assert json.loads(result.model_dump_json())["error"] is None, result
            others = [s for s in executor.slots if s.job is not None]
            arrived.append((done.key, [read_share(executor.shares.path(s.index)) for s in others]))
        cores = os.cpu_count() or 1
        assert arrived[0] == ("short", [cores]), arrived
        assert arrived[1] == ("long", [])
    finally:
        executor.close()
