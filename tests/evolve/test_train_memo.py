"""A second run does not train again what an earlier run trained under the same inputs (meta_agent/train_memo.py).

The second `make demo` spent ~5 of its ~30 minutes retraining main's harness and its noise rerun from the same
policy, seed and tasks as the first: the same experiment, paid twice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from meta_agent import train_memo
from meta_agent.train_memo import TrainMemo, read_reused, reuse_root
from tests.evolve.conftest import data_env, tiny_config
from tests.evolve.lineage_signature import signature


def _evolve(run: Path, data: Path, memo: str, generations: int = 1) -> str:
    env = {**data_env(data, scripted=True), "META_AGENT_REUSE": memo}
    res = subprocess.run([sys.executable, "-m", "meta_agent", "evolve", "--config",
                          str(tiny_config(run, generations=generations))],
                         capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout + res.stderr


def test_a_second_run_reuses_the_first_runs_trainings_and_decides_the_same(tmp_path: Path) -> None:
    memo = tmp_path / "memo"
    first_out = _evolve(tmp_path / "first", tmp_path / "data-1", str(memo), generations=2)
    assert "reused the identical training" not in first_out
    second_out = _evolve(tmp_path / "second", tmp_path / "data-2", str(memo), generations=2)
    assert second_out.count("main's training: reused the identical training") == 2, (
        "generation 1 too: it starts from generation 0's checkpoint, the same weights under another run's "
        "commit and path", second_out[-3000:])
    assert "control-vs-control rerun 1: reused the identical training" in second_out
    assert signature(tmp_path / "first") == signature(tmp_path / "second"), "a reused training changes no decision"

    first, second = (tmp_path / name / "gen-000" / "main" for name in ("first", "second"))
    assert read_reused(second) is not None and read_reused(first) is None
    old, new = (json.loads((d / "checkpoint" / "manifest.json").read_text())["harness_commit"] for d in (first, second))
    repo = git.Repo(tmp_path / "second" / "harness")
    assert old != new, "each run makes its own commits (their hashes carry their time)"
    assert repo.commit(new).tree == git.Repo(tmp_path / "first" / "harness").commit(old).tree
    rollouts = (second / "rollouts.jsonl").read_text()
    assert old not in rollouts and new in rollouts, "the reused rollouts name this run's commit"
    assert rollouts == (first / "rollouts.jsonl").read_text().replace(old, new)
    for path in (p for p in first.rglob("*") if p.is_file() and not p.name.startswith(("report.", "train.worker"))):
        copy = second / path.relative_to(first)
        expected = path.read_bytes().replace(old.encode(), new.encode())
        if path.suffix in {".json", ".jsonl"}:  # a full checkpoint names itself as its base model
            expected = expected.replace(str(first).encode(), str(second).encode())
        assert copy.read_bytes() == expected, copy
    control = json.loads((tmp_path / "second" / "gen-000" / "control-eval.json").read_text())
    assert control["reused_from"], "the same weights' sealed answers come from the first run"
    assert any((memo / "evaluations").glob("*.json"))
    report = json.loads((second / "report.json").read_text())
    assert report["harness_commit"] == new, "the report is rebuilt for this run"

    third_out = _evolve(tmp_path / "third", tmp_path / "data-3", "off")
    assert "reused the identical training" not in third_out
    assert read_reused(tmp_path / "third" / "gen-000" / "main") is None

    for rollouts in (memo / "trainings").glob("*/out/rollouts.jsonl"):  # a store damaged on disk
        rollouts.write_text("{not json\n")
    fourth_out = _evolve(tmp_path / "fourth", tmp_path / "data-4", str(memo))
    assert "main's training: reused" not in fourth_out, "a damaged entry costs a training, not the run"
    assert signature(tmp_path / "fourth") == signature(tmp_path / "first", generations=1)


@pytest.fixture
def two_commits(tmp_path: Path) -> tuple[git.Repo, str, str, str]:
    """A repo with two commits of one tree (made at different times) and a third of another tree."""
    repo = git.Repo.init(tmp_path / "repo")
    (tmp_path / "repo" / "train.py").write_text("print('train')\n")
    repo.index.add(["train.py"])
    first = repo.index.commit("harness", author_date="2026-01-01T00:00:00", commit_date="2026-01-01T00:00:00")
    again = repo.index.commit("harness again", parent_commits=[first.parents[0]] if first.parents else [],
                              author_date="2026-02-01T00:00:00", commit_date="2026-02-01T00:00:00")
    (tmp_path / "repo" / "train.py").write_text("print('other')\n")
    repo.index.add(["train.py"])
    other = repo.index.commit("other harness")
    assert first.tree == again.tree and first.hexsha != again.hexsha
    return repo, first.hexsha, again.hexsha, other.hexsha


def _inputs(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root-model"
    root.mkdir(exist_ok=True)
    (root / "model.safetensors").write_bytes(b"weights")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "t1"}\n')
    return {"policy": root, "root_policy": root, "tasks_file": tasks}


OLD = {"policy": "/runs/first/gen-000/main/checkpoint", "out": "/runs/first/gen-001/main"}


def _out(tmp_path: Path, commit: str) -> Path:
    out = tmp_path / "out"
    (out / "checkpoint").mkdir(parents=True)
    (out / "checkpoint" / "manifest.json").write_text(json.dumps({"harness_commit": commit, "parent": OLD["policy"]}))
    (out / "checkpoint" / "weights.bin").write_bytes(b"\0" + commit.encode() + OLD["policy"].encode())
    (out / "rollouts.jsonl").write_text(json.dumps({"harness_commit": commit, "text": "x"}) + "\n")
    (out / "report.json").write_text(json.dumps({"harness_commit": commit}))
    return out


def test_a_stored_training_comes_back_under_the_new_commit_and_keys_follow_every_input(
        tmp_path: Path, two_commits: tuple[git.Repo, str, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    repo, first, again, other = two_commits
    memo = TrainMemo(tmp_path / "memo", {"domain": "math", "settings": {"lr": 1}})
    inputs = _inputs(tmp_path)

    def key(commit: str = first, memo: TrainMemo = memo, **change: object) -> str | None:
        return memo.key(repo=repo, commit=commit, diagnose_commit=commit, history=None,
                        **{**inputs, "steps": 2, "seed": 0, **change})  # type: ignore[arg-type]

    assert key() == key(again), "the same tree under another commit is the same training"
    variants = [key(other), key(seed=1), key(steps=3),
                key(memo=TrainMemo(memo.root, {"domain": "math", "settings": {"lr": 2}}))]
    assert None not in variants and len({key(), *variants}) == 5
    k = key()
    assert k is not None
    policy = tmp_path / "run-a" / "checkpoint"
    policy.mkdir(parents=True)
    (policy / "adapter.safetensors").write_bytes(b"lora")
    moved = tmp_path / "run-b" / "checkpoint"
    shutil.copytree(policy, moved)
    for where, commit in ((policy, first), (moved, again)):  # what each run's harness wrote of the same weights
        (where / "manifest.json").write_text(json.dumps({"format": "full", "base_model": str(where), "steps": 2,
                                                         "parent": str(where.parent), "harness_commit": commit}))
    assert key(policy=policy) == key(policy=moved) != k, "a checkpoint counts by its weights, wherever it lies"
    (moved / "manifest.json").write_text(json.dumps({"format": "full", "base_model": str(moved), "steps": 3}))
    assert key(policy=policy) != key(policy=moved), "what the manifest says of the weights counts"
    shutil.copy(policy / "manifest.json", moved / "manifest.json")
    (moved / "adapter.safetensors").write_bytes(b"LORA")
    assert key(policy=policy) != key(policy=moved)
    (inputs["tasks_file"]).write_text('{"id": "t2"}\n')
    assert key() != k, "other training tasks are another training"
    (inputs["tasks_file"]).write_text('{"id": "t1"}\n')
    with monkeypatch.context() as m:  # another kind of machine rounds floats its own way: no reuse there
        m.setattr(train_memo, "machine_identity", lambda: ["x86_64", "Another CPU", "0" * 16])
        train_memo.code_digest.cache_clear()
        assert key() != k
    train_memo.code_digest.cache_clear()
    assert key() == k

    out = _out(tmp_path, first)
    assert memo.store(k, out, {"trained": first, "diagnose": first}, seconds=12.5, paths=OLD)
    assert not memo.store(k, out, {"trained": first, "diagnose": first}, seconds=1.0, paths=OLD), "stored once"
    target = tmp_path / "second" / "main"
    target.mkdir(parents=True)
    new = {"policy": str(tmp_path / "second" / "gen-000" / "main" / "checkpoint"), "out": str(target)}
    record = memo.fetch(k, target, {"trained": again, "diagnose": again}, new)
    assert record is not None and record["seconds"] == 12.5
    manifest = json.loads((target / "checkpoint" / "manifest.json").read_text())
    assert manifest == {"harness_commit": again, "parent": new["policy"]}, "this run's commit and policy"
    assert (target / "checkpoint" / "weights.bin").read_bytes() == b"\0" + again.encode() + OLD["policy"].encode(), \
        "a binary file keeps its length: only a commit hash (40 bytes for 40) is replaced in it"
    assert first not in (target / "rollouts.jsonl").read_text()
    assert not (target / "report.json").exists(), "the report names the old commit: the caller rebuilds it"
    assert read_reused(target) is not None and (target.parent / "main.reused.json").is_file()
    assert memo.fetch("0" * 64, tmp_path / "elsewhere", {"trained": again}, new) is None


def test_a_training_with_links_is_not_stored_and_a_tampered_entry_is_not_fetched(
        tmp_path: Path, two_commits: tuple[git.Repo, str, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, first, again, _ = two_commits
    memo = TrainMemo(tmp_path / "memo", {})
    out = _out(tmp_path, first)
    os.symlink("/etc/passwd", out / "checkpoint" / "leak")
    assert not memo.store("k1", out, {"trained": first}, seconds=1.0, paths=OLD), "a link is not plain data"
    (out / "checkpoint" / "leak").unlink()
    assert memo.store("k1", out, {"trained": first}, seconds=1.0, paths=OLD)
    os.symlink("/etc/passwd", tmp_path / "memo" / "k1" / "out" / "leak")
    target = tmp_path / "target"
    target.mkdir()
    assert memo.fetch("k1", target, {"trained": again}, OLD) is None and not any(target.iterdir())

    monkeypatch.setattr(train_memo, "ENTRY_MB", 0)
    assert not memo.store("k2", out, {"trained": first}, seconds=1.0, paths=OLD), "over the size cap"


def test_the_store_can_be_moved_or_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_AGENT_REUSE", "off")
    assert reuse_root() is None
    monkeypatch.setenv("META_AGENT_REUSE", str(tmp_path / "m"))
    assert reuse_root() == tmp_path / "m"
    monkeypatch.delenv("META_AGENT_REUSE")
    monkeypatch.setenv("META_AGENT_CACHE", str(tmp_path / "cache"))
    assert reuse_root() == tmp_path / "cache" / "reuse"
