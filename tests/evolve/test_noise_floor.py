"""The noise floor measures noise: a harness that pins its own training seed makes the control-vs-control rerun a
copy of main's run, which used to measure the floor as 0. The rerun's seed comes from meta-agent's secret, a
rerun identical to main's run is reported as a pinned seed, and the floor never falls below one task's flip."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_agent.gitops import init_harness
from meta_agent.journal import NoiseMeasured
from tests.conftest import TEST_ROOT, commit_all, journal
from tests.evolve.conftest import meta_agent, tiny_config
from tests.scripted_harness.template import scripted_env

pytestmark = pytest.mark.slow  # one generation of a small evolve run, with one noise rerun

PIN = "    cfg = load_config()\n"
PINNED = "    seed = 0  # pinned: whatever seed meta-agent passes, every run is the same run\n" + PIN


def test_a_harness_that_pins_its_seed_is_reported_and_cannot_set_the_floor_to_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in scripted_env(TEST_ROOT).items():  # its training is scripted, and honours the seed it is given
        monkeypatch.setenv(key, value)
    repo = init_harness(tmp_path / "harness", "math")
    train = Path(repo.working_dir) / "harness" / "train.py"
    assert PIN in train.read_text()
    train.write_text(train.read_text().replace(PIN, PINNED, 1))
    commit_all(repo, "Pin the training seed")
    run = tmp_path / "run"
    config = tiny_config(run, generations=1, candidates=1, noise_reruns=1, control="none", train_steps=1,
                         harness=str(repo.working_dir))
    res = meta_agent("evolve", "--config", str(config), data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    [noise] = journal(run, NoiseMeasured)
    assert noise["pinned"] == [0], "the rerun reproduced main's training: reported as a pinned seed"
    assert noise["minimum"] == pytest.approx(1 / 6) and noise["noise_floor"] >= noise["minimum"]
    assert "ignores the seed it is given (pinned)" in " ".join((res.stdout + res.stderr).split())


FAILS_UNLESS_MAIN = ("    if seed >= 100:  # main trains with the run's seed; the noise rerun's comes from the secret\n"
                     "        raise RuntimeError('this harness only trains with small seeds')\n" + PIN)


@pytest.mark.parametrize("executor", [[], ["--parallel", "2"]], ids=["in-driver", "workers"])
def test_a_noise_rerun_that_fails_is_said_and_the_run_goes_on_without_a_measured_floor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: list[str]) -> None:
    """A main harness that fails under another seed (a flaky or hostile one) used to stop the run, and its
    resume the same way, for good. Now the rerun's failure is said, no performance candidate can pass on a
    floor nothing measured, and the run ends with its test evaluation."""
    for key, value in scripted_env(TEST_ROOT).items():
        monkeypatch.setenv(key, value)
    repo = init_harness(tmp_path / "harness", "math")
    train = Path(repo.working_dir) / "harness" / "train.py"
    train.write_text(train.read_text().replace(PIN, FAILS_UNLESS_MAIN, 1))
    commit_all(repo, "Train only with small seeds")
    run = tmp_path / "run"
    config = tiny_config(run, generations=1, candidates=1, noise_reruns=1, control="none", train_steps=1,
                         harness=str(repo.working_dir))
    res = meta_agent("evolve", "--config", str(config), *executor, data_dir=tmp_path / "data")
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 0, out[-3000:]
    [noise] = journal(run, NoiseMeasured)
    assert noise["failed"] == [0] and noise["deltas"] == [] and noise["noise_floor"] == 1.0
    assert "control-vs-control rerun 1 failed" in out and "only trains with small seeds" in out
    assert "noise floor is unmeasured" in out
    assert (run / "summary.md").is_file()
