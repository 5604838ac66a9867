"""`evolve --tracker` and `meta-agent track`: meta-agent's per-generation numbers reach each backend's
files, equal to what the journal says, beside every training run's optimizer steps."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from meta_agent.journal import GenerationDone, VerdictRecorded
from tests.conftest import journal
from tests.evolve.conftest import meta_agent
from tests.foundation.test_trackers import mlflow_runs, tensorboard_dirs, tensorboard_scalars, trackio_logs

pytestmark = pytest.mark.slow  # needs the reference evolve run


def _expected(run: Path) -> tuple[list[float], list[int]]:
    done = sorted(journal(run, GenerationDone), key=lambda d: d["gen"])
    verdicts = {v["cand_id"]: v for v in journal(run, VerdictRecorded)}  # the last verdict of each candidate
    gen_of = {c: int(c.rsplit("/", 1)[1].split("-")[0]) for c in verdicts}
    promoted = [sum(v["verdict"] == "promoted" for c, v in verdicts.items() if gen_of[c] == g)
                for g in range(len(done))]
    return [d["control_score"] for d in done], promoted


def test_evolve_with_tensorboard_writes_generations_and_every_training_run(reference_run: Path) -> None:
    scores, _ = _expected(reference_run)
    store = reference_run / "tracker" / "tensorboard"
    gens = tensorboard_scalars(store / "meta-agent")
    assert [v for _, v in gens["main/selection_score"]] == pytest.approx(scores)
    assert [s for s, _ in gens["candidates/proposed"]] == [0, 1]
    assert "final/evolved_minus_static" in gens
    trained = {p.relative_to(store).as_posix() for p in tensorboard_dirs(store)} - {"meta-agent"}
    assert {"gen-000/main", "gen-001/main"} <= trained
    assert any(name.endswith("/train") for name in trained), "candidate backtests are tracked too"
    # TRL's own callback wrote into each training run's dir, from inside the sandbox.
    [trl_dir] = tensorboard_dirs(reference_run / "gen-000" / "main" / "tracker")
    assert [step for step, _ in tensorboard_scalars(trl_dir)["train/loss"]] == [1]  # train_steps: 1


def test_track_exports_a_finished_run_to_mlflow_and_trackio(reference_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "copy"
    shutil.copytree(reference_run, run, symlinks=True, ignore=shutil.ignore_patterns("tracker"))
    scores, promoted = _expected(run)
    for tracker in ("mlflow", "trackio"):
        res = meta_agent("track", str(run), "--tracker", tracker, data_dir=tmp_path / "data", timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"tracker files: {run / 'tracker' / tracker}" in res.stdout.replace("\n", "")
    runs = mlflow_runs(run / "tracker" / "mlflow")
    assert [v for _, v in runs["meta-agent"]["main/selection_score"]] == pytest.approx(scores)
    assert [v for _, v in runs["meta-agent"]["candidates/promoted"]] == promoted
    assert "gen-001/main" in runs and runs["gen-001/main"]["reward_mean"]
    rows = trackio_logs(run / "tracker" / "trackio")
    assert [r["main/selection_score"] for r in rows["meta-agent"] if "main/selection_score" in r] == \
        pytest.approx(scores)
    assert "gen-000/main" in rows
    # Exporting again rebuilds the files instead of logging every generation twice.
    assert meta_agent("track", str(run), "--tracker", "mlflow", data_dir=tmp_path / "data").returncode == 0
    again = mlflow_runs(run / "tracker" / "mlflow")
    assert len(again["meta-agent"]["main/selection_score"]) == len(scores)
