"""A seed's arms in two lanes side by side (bench/efficacy_lib/lanes.py): each lane's children get half the
cores, a failing lane lets the other finish, a stopped benchmark leaves no child of either lane behind and
starts no new one; and an arm that is another arm's job (same harness files) is not run twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import git
import pytest

from bench.efficacy_lib.harnesses import copy_harness, same_files
from bench.efficacy_lib.lanes import run_lanes, threads_per_lane
from meta_agent.errors import UserError
from meta_agent.gitops import author_env, init_harness
from tests.efficacy.test_efficacy_driver import ROOT, _alive


def test_a_failing_lane_lets_the_other_finish_then_says_why(tmp_path: Path) -> None:
    done = tmp_path / "done"

    def fails() -> None:
        raise UserError("seed 0: `meta-agent evolve` failed (exit 1)")

    def finishes() -> None:
        time.sleep(0.3)
        done.write_text("saved")

    with pytest.raises(UserError, match="meta-agent evolve"):
        run_lanes([fails, finishes], side_by_side=True)
    assert done.read_text() == "saved", "the other lane's arm was lost with the failing one"

    def also_fails() -> None:
        raise UserError("seed 0: `meta-agent rollout` failed (exit 1)")

    with pytest.raises(UserError) as both:
        run_lanes([fails, also_fails], side_by_side=True)
    assert "evolve" in str(both.value) and "rollout" in str(both.value), "one lane's reason was dropped"


def test_each_lane_gets_its_share_of_the_cores() -> None:
    assert threads_per_lane(1) is None, "one lane: the child keeps every core"
    assert threads_per_lane(2) == max(1, (os.cpu_count() or 1) // 2)


DRIVER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from bench.efficacy_lib import commands
    from bench.efficacy_lib.lanes import run_lanes
    # stand-ins for long arms: each records its pid and its torch threads, then works until stopped
    commands.META_AGENT = (sys.executable, "-c", "import os, sys, time; "
                           "open(sys.argv[1], 'w').write(f'{os.getpid()} {os.environ.get(\\"OMP_NUM_THREADS\\")}'); "
                           "time.sleep(600)")
    commands.stop_on_sigterm()
    tmp = Path(sys.argv[1])
    def lane(name):
        def arms():
            for arm in ("first", "second"):
                commands.run_meta_agent(str(tmp / f"{name}-{arm}.pid"), data=tmp / "data", who="seed 0", threads=1)
        return arms
    run_lanes([lane("a"), lane("b")], side_by_side=True)
""")


def test_stopping_the_benchmark_stops_both_lanes_arms_and_starts_no_other(tmp_path: Path) -> None:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path)],
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    firsts = [tmp_path / "a-first.pid", tmp_path / "b-first.pid"]
    children: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not all(p.is_file() and p.read_text() for p in firsts) and time.monotonic() < deadline:
            assert driver.poll() is None, "the driver died before its arms started"
            time.sleep(0.1)
        seen = [p.read_text().split() for p in firsts]
        children = [int(pid) for pid, _ in seen]
        assert [threads for _, threads in seen] == ["1", "1"], "each lane's child is told its share of the cores"
        assert all(_alive(c) for c in children), "the two lanes run side by side"
        driver.send_signal(signal.SIGTERM)  # what a scheduler does: the driver's pid only
        assert driver.wait(timeout=90) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 30
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(c) for c in children), "an arm outlived the benchmark"
        assert not (tmp_path / "a-second.pid").exists() and not (tmp_path / "b-second.pid").exists(), \
            "a lane started its next arm after the benchmark was stopped"
    finally:
        driver.kill()
        for c in children:
            if _alive(c):
                os.kill(c, signal.SIGKILL)


def test_a_harness_is_the_same_job_only_when_its_files_are_the_same(tmp_path: Path) -> None:
    reference = init_harness(tmp_path / "reference", "math")
    final = tmp_path / "final"
    copy_harness(Path(reference.working_dir), final)
    repo = git.Repo(final)
    repo.git.commit("--allow-empty", "-m", "a merge that changed no file", env=author_env())
    assert same_files(final, Path(reference.working_dir)), "history differs, files do not: the same training"
    (final / "harness.yaml").write_text((final / "harness.yaml").read_text() + "\n# one byte more\n")
    assert same_files(final, Path(reference.working_dir)), "an uncommitted edit is not what `rollout` trains"
    repo.git.commit("-am", "a merged change", env=author_env())
    assert not same_files(final, Path(reference.working_dir))
