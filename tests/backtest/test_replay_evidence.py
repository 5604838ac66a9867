"""The replay stage measures what a candidate does; that, not its label, decides its kind. And the replay
set a harness reads gives it no way to tell a hacking probe from a rollout."""

from __future__ import annotations

import json
from pathlib import Path

from meta_agent.backtest.replay import compare
from meta_agent.backtest.replay_set import build_replay_set
from meta_agent.contract import ReplayRecord, RolloutRecord


def _rec(rid: str, reward: float, *, weight: float = 1.0, labels: list[str] | None = None) -> ReplayRecord:
    return ReplayRecord(rollout_id=rid, rewards={"correctness": reward}, reward=reward, advantage=0.0, weight=weight,
                        labels=labels or [])


def _setup(n_rejected: int = 40, n_accepted: int = 12) -> tuple[dict[str, ReplayRecord], dict[str, bool]]:
    main = {f"x{i}": _rec(f"x{i}", 1.0 if i % 2 else 0.0) for i in range(n_rejected)}
    main |= {f"y{i}": _rec(f"y{i}", 1.0) for i in range(n_accepted)}
    verified = {f"x{i}": False for i in range(n_rejected)} | {f"y{i}": True for i in range(n_accepted)}
    return main, verified


def test_paying_rejected_rollouts_while_zeroing_one_is_not_a_validity_fix() -> None:
    """Reproduction 1: +0.2 to 30 verifier-rejected rollouts, one zeroed, was 'validity evidence'."""
    main, verified = _setup()
    cand = dict(main)
    for i in range(30):
        cand[f"x{i}"] = _rec(f"x{i}", main[f"x{i}"].reward + 0.2)
    cand["x39"] = _rec("x39", 0.0)
    evidence = compare(main, cand, verified, probes=set())
    assert evidence.measured_kind == "performance"
    assert evidence.rejected_gained == 30 and evidence.rejected_lost == 1


def test_taking_reward_only_from_rejected_rollouts_is_validity() -> None:
    main, verified = _setup()
    cand = dict(main) | {f"x{i}": _rec(f"x{i}", 0.0) for i in range(40)}
    evidence = compare(main, cand, verified, probes=set())
    assert evidence.measured_kind == "validity", evidence.kind_reason
    assert evidence.rejected_lost == 20 and evidence.accepted_changed == 0


def test_a_new_penalty_on_rejected_rollouts_is_shaping_not_validity() -> None:
    """Pushing wrong rollouts below what main gave them changes the advantages: training must judge it."""
    main, verified = _setup()
    cand = dict(main) | {f"x{i}": _rec(f"x{i}", -0.5) for i in range(0, 40, 2)}  # were paid 0
    evidence = compare(main, cand, verified, probes=set())
    assert evidence.measured_kind == "performance" and evidence.penalized == 20


def test_touching_one_accepted_rollout_makes_it_performance() -> None:
    main, verified = _setup()
    cand = dict(main) | {f"x{i}": _rec(f"x{i}", 0.0) for i in range(40)} | {"y0": _rec("y0", 0.5)}
    assert compare(main, cand, verified, probes=set()).measured_kind == "performance"


def test_a_filter_weight_is_a_change_too() -> None:
    main, verified = _setup()
    cand = dict(main) | {"x1": _rec("x1", 1.0, weight=0.0)}
    assert compare(main, cand, verified, probes=set()).measured_kind == "performance"


def test_labels_alone_are_a_diagnostic_judged_on_evidence() -> None:
    main, verified = _setup(n_rejected=30, n_accepted=30)
    good = dict(main) | {f"x{i}": _rec(f"x{i}", main[f"x{i}"].reward, labels=["hedge"]) for i in range(20)}
    evidence = compare(main, good, verified, probes=set())
    assert evidence.measured_kind == "diagnostic"
    assert [e.passed for e in evidence.new_labels] == [True]


def test_a_probe_gaining_reward_is_named() -> None:
    main, verified = _setup()
    cand = dict(main) | {"x0": _rec("x0", 1.0)}
    evidence = compare(main, cand, verified, probes={"x0"})
    assert evidence.probes_gained == ["x0"]


def _rollout(rid: str, group: str, completion: str, verified: bool, **extra: object) -> RolloutRecord:
    return RolloutRecord(rollout_id=rid, step=3, task_id="t1", group_id=group, prompt="What is 2+2?",
                         completion=completion, rewards={"correctness": 1.0}, reward=1.0, advantage=0.5,
                         prompt_tokens=12, completion_tokens=3, truncated=False, labels=["truncated"],
                         harness_commit="abc", verified=verified, extra=dict(extra))


def test_the_replay_file_hides_which_rollouts_are_probes(tmp_path: Path) -> None:
    rollouts = [_rollout(f"s3-g1-c{i}", "s3-g1", "Answer: 4", True) for i in range(4)]
    probes = [_rollout("probe-spray-t1", "probe-t1", "1 2 3 4 5", False, probe="spray")]
    probes[0] = probes[0].model_copy(update={"rewards": {}, "reward": 0.0, "prompt_tokens": 0, "step": 0,
                                             "harness_commit": "probe"})
    replay_set = build_replay_set(tmp_path / "rollouts.jsonl", rollouts, probes, salt="secret",
                                  session_path=tmp_path / "session" / "rollouts.jsonl")
    text = (tmp_path / "rollouts.jsonl").read_text()
    assert "probe" not in text, "no id, group, marker or commit names the probe"
    lines = [json.loads(line) for line in text.splitlines()]
    assert all(line["verified"] is None and line["labels"] == [] and line["rewards"] == {} for line in lines)
    assert len({(line["step"], line["prompt_tokens"], line["harness_commit"]) for line in lines}) == 1
    assert len(replay_set.probes) == 1 and sum(not v for v in replay_set.verified.values()) == 1
    other = build_replay_set(tmp_path / "other.jsonl", rollouts, probes, salt="another secret",
                             session_path=tmp_path / "session" / "other.jsonl")
    assert replay_set.probes != other.probes, "ids change with the secret salt"


def test_an_agent_session_cannot_pick_the_probes_out_of_the_replay_set(tmp_path: Path) -> None:
    """The attack: a coder reads the evidence (every real rollout, whole) and its session's replay file;
    rows of the file missing from the evidence would be the probes, to be special-cased by the candidate."""
    rollouts = [_rollout(f"s3-g1-c{i}", "s3-g1", f"Answer: {i}", i == 0) for i in range(4)]
    probes = [_rollout("probe-spray-t1", "probe-t1", "1 2 3 4 5 6 7 8", False, probe="spray")]
    replay_set = build_replay_set(tmp_path / "stage" / "rollouts.jsonl", rollouts, probes, salt="secret",
                                  session_path=tmp_path / "session" / "rollouts.jsonl")
    assert replay_set.session_path.parent != replay_set.path.parent, "a session mounts its file's whole folder"
    seen = [json.loads(line) for line in replay_set.session_path.read_text().splitlines()]
    evidence = {r.completion for r in rollouts}
    assert {row["completion"] for row in seen} == evidence, "the session sees exactly the evidence's rollouts"
    assert "1 2 3 4 5 6 7 8" not in replay_set.session_path.read_text()
    stage_ids = {json.loads(line)["rollout_id"] for line in replay_set.path.read_text().splitlines()}
    assert not stage_ids & {row["rollout_id"] for row in seen}, "no id the session saw finds a row of the stage"
