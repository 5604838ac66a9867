"""A seed's arms in two lanes side by side (bench/efficacy_lib/lanes.py): each lane's children get half the
cores, a failing lane lets the other finish, a stopped benchmark leaves no child of either lane behind and
starts no new one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.efficacy_lib.lanes import ArmQueue, lane_threads, run_lanes, threads_per_lane
from meta_agent.errors import UserError
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


def test_the_arms_after_the_searches_go_to_whichever_lane_is_free() -> None:
    """Fixed lanes left the lane with the shorter list idle while the other still had arms: every queued arm
    runs once, on either lane; the arms that need no evolve run are queued before the searches, so the lane
    whose search ends first starts them; the longest arm, queued after, goes ahead of them; an arm that
    reuses another's result starts after that one ended, and a failing arm stops neither lane; its reason
    is raised once both are done."""
    queue, lock = ArmQueue(), threading.Lock()
    ran: dict[str, tuple[str, float, float]] = {}
    searched: dict[str, float] = {}

    def arm(name: str, seconds: float, fails: bool = False) -> Callable[[], None]:
        def run() -> None:
            started = time.monotonic()
            time.sleep(seconds)
            with lock:
                ran[name] = (threading.current_thread().name, started, time.monotonic())
            if fails:
                raise UserError(f"seed 0: `meta-agent rollout` of {name} failed (exit 1)")
        return run

    for name, seconds in (("reference_rollout", 0.3), ("reference_again", 0.3), ("template", 0.2)):
        queue.add(name, arm(name, seconds))  # the planned steps are known before either search

    def search_lane() -> None:  # the evolve arm, then the arms made from it
        try:
            time.sleep(0.5)
            searched["evolve"] = time.monotonic()
            queue.add("reference_total", arm("reference_total", 2.0), first=True)
            queue.add("blind_bundle", arm("blind_bundle", 0.2, fails=True))
            queue.add("retrained", arm("retrained", 0.1), frozenset({"reference_rollout"}))
            queue.add("orphan", arm("orphan", 0.1), frozenset({"an arm never queued"}))
        finally:
            queue.close()
        queue.work()

    def random_lane() -> None:  # a shorter search
        time.sleep(0.1)
        queue.work()

    with pytest.raises(UserError, match="blind_bundle"):
        run_lanes([search_lane, random_lane], side_by_side=True)
    assert set(ran) == {"reference_total", "reference_rollout", "reference_again", "blind_bundle", "template",
                        "retrained", "orphan"}
    assert len({lane for lane, _, _ in ran.values()}) == 2, "both lanes took arms"
    assert ran["reference_rollout"][1] < searched["evolve"], "the free lane did not wait for the evolve arm"
    assert ran["reference_total"][1] < ran["blind_bundle"][1], "the longest arm went ahead of those queued before"
    assert ran["retrained"][1] >= ran["reference_rollout"][2], "it may take reference_rollout's result: after it"
    assert ran["template"][1] < ran["reference_total"][2], "the free lane did not wait for the long arm"

    empty = ArmQueue()
    empty.close()
    empty.work()  # a search lane that failed closes the queue: the other lane must not wait for arms


def test_each_lane_gets_its_share_of_the_cores() -> None:
    assert threads_per_lane(1) is None, "one lane: the child keeps every core"
    assert threads_per_lane(2) == max(1, (os.cpu_count() or 1) // 2)


def test_a_lane_left_alone_gives_its_next_arm_every_core() -> None:
    """When one lane has finished, the other's remaining arms would leave a core idle on half the threads."""
    seen: dict[str, int | None] = {}
    long_started = threading.Event()

    def short() -> None:
        seen["short"] = lane_threads()
        assert long_started.wait(30)

    def long() -> None:
        seen["long, first arm"] = lane_threads()
        long_started.set()
        deadline = time.monotonic() + 30
        while lane_threads() is not None and time.monotonic() < deadline:  # until the short lane has ended
            time.sleep(0.01)
        seen["long, next arm"] = lane_threads()

    run_lanes([long, short], side_by_side=True)
    half = threads_per_lane(2)
    assert seen == {"short": half, "long, first arm": half, "long, next arm": None}
    assert lane_threads() is None, "after the lanes, a child gets every core"
    run_lanes([lambda: seen.update(alone=lane_threads())], side_by_side=False)
    assert seen["alone"] is None


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



RACE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from meta_agent.sealed import make_secret
    print(make_secret(Path(sys.argv[1])))
""")


def test_processes_racing_to_draw_the_secret_all_read_the_same_whole_one(tmp_path: Path) -> None:
    """Both lanes' first runs may draw the seed's secret at once: none may read it half-written (an empty
    secret would seal other splits), and every one must get the first draw."""
    path = tmp_path / "data" / "sealed-secret"
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(path)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}) for _ in range(8)]
    seen = {proc.communicate(timeout=120)[0].strip() for proc in procs}
    assert seen == {path.read_text().strip()} and len(seen.pop()) == 64
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in path.parent.iterdir()] == ["sealed-secret"], "a draw's private file was left behind"
