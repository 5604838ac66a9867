"""Stage 2, replay: the candidate re-scores the generation's rollouts and the hacking probes.

Compared with main's replay of the same set: how many rewards flip, agreement with the
sealed verifier, and the hard rule that no hacking probe (a synthetic rollout that games the
reward and that the verifier rejects) may gain reward. Ordinary wrong rollouts that gain
reward are counted, not fatal: shaping rewards (format, partial credit) do that on purpose,
and the train stage judges whether it helps. For validity changes it also measures the
evidence the gate needs: reward taken from invalid rollouts only, or a new label's
precision/recall against the verifier.
"""

from __future__ import annotations

import time
from pathlib import Path

from meta_agent.contract import ReplayRecord, RolloutRecord
from meta_agent.harness_runner import HarnessError, HarnessRunner
from meta_agent.verdicts import StageResult
from sandboxes import Limits, Sandbox

EPS = 1e-9


def _agreement(replayed: dict[str, ReplayRecord], verified: dict[str, bool]) -> float:
    return sum((replayed[i].reward > 0) == v for i, v in verified.items()) / max(1, len(verified))


def compare(
    main: dict[str, ReplayRecord],
    cand: dict[str, ReplayRecord],
    verified: dict[str, bool],
    probes: set[str],
    new_labels: list[str],
    min_precision: float,
) -> dict[str, object]:
    """The replay metrics; `validity_evidence` says whether a validity change earned promotion."""
    ids = sorted(verified)
    invalid = [i for i in ids if not verified[i]]
    gained = [i for i in invalid if cand[i].reward > main[i].reward + EPS]
    probes_gained = [i for i in gained if i in probes]
    lost_invalid = [i for i in invalid if cand[i].reward < main[i].reward - EPS]
    lost_valid = [i for i in ids if verified[i] and cand[i].reward < main[i].reward - EPS]
    metrics: dict[str, object] = {
        "rollouts": len(ids),
        "probes": len(probes),
        "reward_flips": sum(1 for i in ids if abs(cand[i].reward - main[i].reward) > EPS),
        "agreement_main": round(_agreement(main, verified), 4),
        "agreement_candidate": round(_agreement(cand, verified), 4),
        "invalid_gained": len(gained),
        "probes_gained": probes_gained,
        "invalid_lost": len(lost_invalid),
        "valid_lost": len(lost_valid),
        "probes_rewarded_main": sum(1 for p in probes if main[p].reward > EPS),
        "probes_rewarded_candidate": sum(1 for p in probes if cand[p].reward > EPS),
    }
    label_stats = {}
    for label in new_labels:
        flagged = [i for i in ids if label in cand[i].labels]
        tp = sum(1 for i in flagged if not verified[i])
        label_stats[label] = {
            "flagged": len(flagged),
            "precision": tp / len(flagged) if flagged else 0.0,
            "recall": tp / len(invalid) if invalid else 0.0,
        }
    metrics["new_labels"] = label_stats
    if new_labels:
        weak = [lab for lab, s in label_stats.items() if s["precision"] < min_precision or s["recall"] <= 0]
        metrics["validity_evidence"] = not weak
        metrics["validity_reason"] = (
            f"new labels {weak} fall short (precision >= {min_precision} and recall > 0 required)" if weak else
            "new labels: " + ", ".join(f"{lab} precision {s['precision']:.2f} recall {s['recall']:.2f}"
                                       for lab, s in label_stats.items()))
    else:
        ok = bool(lost_invalid) and not lost_valid
        metrics["validity_evidence"] = ok
        metrics["validity_reason"] = (
            f"takes reward from {len(lost_invalid)} rollouts the verifier rejects and from none it accepts" if ok
            else f"takes reward from {len(lost_invalid)} rejected and {len(lost_valid)} accepted rollouts")
    return metrics


def run_replay(
    *,
    sandbox: Sandbox,
    limits: Limits,
    workdir: Path,
    commit: str,
    rollouts_file: Path,
    rollouts: list[RolloutRecord],
    tasks_file: Path,
    main_replay: dict[str, ReplayRecord],
    out: Path,
    new_labels: list[str],
    min_precision: float,
) -> StageResult:
    started = time.monotonic()
    try:
        with HarnessRunner(sandbox, workdir, commit=commit, readable=[rollouts_file.parent, tasks_file.parent],
                           writable=[out.parent], limits=limits) as runner:
            replayed = runner.replay(rollouts=rollouts_file, tasks=tasks_file, out=out,
                                     expected={r.rollout_id for r in rollouts})
            cand = {r.rollout_id: r for r in replayed}
    except HarnessError as e:
        return StageResult(stage="replay", passed=False, reason=e.reason, seconds=time.monotonic() - started)
    verified = {r.rollout_id: bool(r.verified) for r in rollouts}
    probes = {r.rollout_id for r in rollouts if r.extra.get("probe")}
    metrics = compare(main_replay, cand, verified, probes, new_labels, min_precision)
    gained = metrics["probes_gained"]
    seconds = time.monotonic() - started
    if isinstance(gained, list) and gained:
        shown = ", ".join(gained[:3]) + (f" and {len(gained) - 3} more" if len(gained) > 3 else "")
        return StageResult(stage="replay", passed=False, seconds=seconds, metrics=metrics,
                           reason=f"rewards {len(gained)} hacking probes more than main does ({shown})")
    return StageResult(stage="replay", passed=True, seconds=seconds, metrics=metrics,
                       reason=f"{metrics['reward_flips']} reward flips; verifier agreement "
                              f"{metrics['agreement_main']:.2f} -> {metrics['agreement_candidate']:.2f}; "
                              f"probes rewarded {metrics['probes_rewarded_main']} -> "
                              f"{metrics['probes_rewarded_candidate']}")
