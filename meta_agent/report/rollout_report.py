"""RolloutReport: the evidence a diagnosis starts from, computed from one training run's files."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from meta_agent.contract import MetricsRecord, RolloutRecord, Task

DOMINANT_SHARE = 0.2
"""A label on at least this share of rollouts counts as a dominant failure mode."""
EXEMPLARS_PER_LABEL = 2
EXEMPLAR_CHARS = 600


class Exemplar(BaseModel):
    rollout_id: str
    task_id: str
    reward: float
    verified: bool | None
    labels: list[str]
    prompt: str
    completion: str


class LabelStat(BaseModel):
    label: str
    count: int
    share: float = Field(description="share of all rollouts carrying the label")
    exemplars: list[Exemplar]


class DifficultyStat(BaseModel):
    difficulty: int
    rollouts: int
    reward_mean: float
    verified_rate: float | None


class RolloutReport(BaseModel):
    domain: str
    harness_commit: str
    policy: str
    steps: int
    rollouts: int
    groups: int
    reward_mean: float
    reward_components: dict[str, float]
    verified_rate: float | None = Field(description="share the sealed verifier accepts")
    reward_verifier_agreement: float | None
    truncation_rate: float
    zero_variance_groups: int
    zero_variance_frac: float
    mean_completion_tokens: float
    total_tokens: int
    train_wall_time: float
    entropy_change: float | None = Field(description="relative change of policy entropy, first to last step")
    learning_gain: float | None = Field(
        None, description="the verified rate (the reward where nothing is verified) over the last half of the "
                          "steps minus over the first half: how much the policy improved while it trained")
    selection_noise: float | None = Field(
        None, description="|paired delta| on the selection split between main trained with two seeds (the "
                          "noise floor); 0: training randomness changed not one greedy answer, the update is "
                          "too small to change behaviour; None: not measured")
    probes_rewarded: float | None = Field(
        None, description="share of meta-agent's hacking probes (all verifier-rejected) that this harness rewards")
    curves: list[MetricsRecord]
    labels: list[LabelStat]
    dominant: list[str] = Field(description="labels on >= 20% of rollouts, most frequent first")
    by_difficulty: list[DifficultyStat]

    def label_share(self, label: str) -> float:
        return next((s.share for s in self.labels if s.label == label), 0.0)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _clip(text: str) -> str:
    return text if len(text) <= EXEMPLAR_CHARS else text[:EXEMPLAR_CHARS] + " [...]"


def _exemplar(r: RolloutRecord) -> Exemplar:
    return Exemplar(rollout_id=r.rollout_id, task_id=r.task_id, reward=r.reward, verified=r.verified,
                    labels=r.labels, prompt=_clip(r.prompt), completion=_clip(r.completion))


def _entropy_change(metrics: list[MetricsRecord]) -> float | None:
    values = [m.entropy for m in metrics if m.entropy is not None]
    if len(values) < 2 or values[0] == 0:
        return None
    return (values[-1] - values[0]) / abs(values[0])


def _learning_gain(rollouts: list[RolloutRecord]) -> float | None:
    """Late-half minus early-half success (by optimizer step); None with fewer than 2 steps."""
    steps = sorted({r.step for r in rollouts})
    if len(steps) < 2:
        return None
    verified = all(r.verified is not None for r in rollouts)

    def success(rs: list[RolloutRecord]) -> float:
        return _mean([float(bool(r.verified)) if verified else r.reward for r in rs])

    middle = steps[len(steps) // 2]
    return success([r for r in rollouts if r.step >= middle]) - success([r for r in rollouts if r.step < middle])


def build_report(
    *,
    domain: str,
    policy: str,
    rollouts: list[RolloutRecord],
    metrics: list[MetricsRecord],
    tasks: dict[str, Task],
    train_wall_time: float,
) -> RolloutReport:
    """`rollouts` should carry the final labels (from `harness diagnose`) and `verified` verdicts."""
    n = len(rollouts)
    groups: dict[str, list[RolloutRecord]] = defaultdict(list)
    for r in rollouts:
        groups[r.group_id].append(r)
    zero_var = sum(1 for g in groups.values() if len(g) > 1 and len({round(r.reward, 9) for r in g}) == 1)
    counts = Counter(label for r in rollouts for label in set(r.labels))
    by_label: dict[str, list[RolloutRecord]] = defaultdict(list)
    for r in rollouts:
        for label in r.labels:
            if len(by_label[label]) < EXEMPLARS_PER_LABEL:
                by_label[label].append(r)
    labels = [
        LabelStat(label=lab, count=c, share=c / n, exemplars=[_exemplar(r) for r in by_label[lab]])
        for lab, c in counts.most_common()
    ]
    verdicts = [r for r in rollouts if r.verified is not None]
    components = sorted({k for r in rollouts for k in r.rewards})
    diff_groups: dict[int, list[RolloutRecord]] = defaultdict(list)
    for r in rollouts:
        diff_groups[tasks[r.task_id].difficulty if r.task_id in tasks else 0].append(r)
    return RolloutReport(
        domain=domain,
        harness_commit=rollouts[0].harness_commit if rollouts else "unknown",
        policy=policy,
        steps=len(metrics),
        rollouts=n,
        groups=len(groups),
        reward_mean=_mean([r.reward for r in rollouts]),
        reward_components={k: _mean([r.rewards.get(k, 0.0) for r in rollouts]) for k in components},
        verified_rate=_mean([float(bool(r.verified)) for r in verdicts]) if verdicts else None,
        reward_verifier_agreement=(
            _mean([float((r.reward > 0) == bool(r.verified)) for r in verdicts]) if verdicts else None
        ),
        truncation_rate=_mean([float(r.truncated) for r in rollouts]),
        zero_variance_groups=zero_var,
        zero_variance_frac=zero_var / len(groups) if groups else 0.0,
        mean_completion_tokens=_mean([r.completion_tokens for r in rollouts]),
        total_tokens=sum(r.prompt_tokens + r.completion_tokens for r in rollouts),
        train_wall_time=train_wall_time,
        entropy_change=_entropy_change(metrics),
        learning_gain=_learning_gain(rollouts),
        curves=metrics,
        labels=labels,
        dominant=[s.label for s in labels if s.share >= DOMINANT_SHARE],
        by_difficulty=[
            DifficultyStat(
                difficulty=d,
                rollouts=len(rs),
                reward_mean=_mean([r.reward for r in rs]),
                verified_rate=(_mean([float(bool(r.verified)) for r in rs if r.verified is not None])
                               if any(r.verified is not None for r in rs) else None),
            )
            for d, rs in sorted(diff_groups.items())
        ],
    )
