"""Is a new diagnostic label evidence of invalid rollouts? Lift over the base rate, tested for chance.

Raw precision against the sealed verifier is meaningless when almost every rollout is rejected
anyway: a label set at random on 30% of 52 rollouts, 51 of them rejected, has precision 0.91.
What matters is whether the label picks rejected rollouts *more often than their share*: the
lift (precision minus the base rate) and a one-sided Fisher exact test on the 2x2 table
flagged x rejected, which accounts for how few rollouts there are.
"""

from __future__ import annotations

from math import comb

from pydantic import BaseModel, Field


class LabelEvidence(BaseModel):
    label: str
    flagged: int = Field(description="rollouts the label is set on")
    flagged_rejected: int = Field(description="of those, rejected by the sealed verifier")
    rejected: int = Field(description="rollouts the verifier rejects, flagged or not")
    total: int
    precision: float
    base_rate: float = Field(description="share of all rollouts the verifier rejects")
    lift: float = Field(description="precision - base rate")
    recall: float
    p_value: float = Field(description="one-sided Fisher exact test: P(at least this many rejected among flagged)")
    passed: bool
    reason: str


def fisher_one_sided(a: int, flagged: int, rejected: int, total: int) -> float:
    """P(X >= a) for X hypergeometric: `flagged` draws from `total` rollouts of which `rejected` are rejected."""
    denominator = comb(total, flagged)
    if denominator == 0:
        return 1.0
    high = min(flagged, rejected)
    return sum(comb(rejected, x) * comb(total - rejected, flagged - x) for x in range(a, high + 1)) / denominator


def judge_label(label: str, flags: dict[str, bool], rejected: dict[str, bool], *, alpha: float = 0.05,
                min_lift: float = 0.1, min_support: int = 3) -> LabelEvidence:
    """Evidence for `label` from per-rollout flags and verifier rejections (same keys)."""
    ids = sorted(flags)
    total = len(ids)
    flagged = [i for i in ids if flags[i]]
    n_rejected = sum(1 for i in ids if rejected[i])
    a = sum(1 for i in flagged if rejected[i])
    precision = a / len(flagged) if flagged else 0.0
    base = n_rejected / total if total else 0.0
    p = fisher_one_sided(a, len(flagged), n_rejected, total) if flagged else 1.0
    lift = precision - base
    if a < min_support:
        passed, reason = False, f"flags {a} rejected rollouts; at least {min_support} are needed to judge it"
    elif lift < min_lift:
        passed, reason = False, (f"precision {precision:.2f} is not above the base rate {base:.2f} by {min_lift} "
                                 "(a label set at random would do as well)")
    elif p >= alpha:
        passed, reason = False, f"lift {lift:+.2f} could be chance (Fisher p = {p:.3f} >= {alpha})"
    else:
        passed, reason = True, f"precision {precision:.2f} vs base rate {base:.2f} (lift {lift:+.2f}, p = {p:.3g})"
    return LabelEvidence(label=label, flagged=len(flagged), flagged_rejected=a, rejected=n_rejected, total=total,
                         precision=round(precision, 4), base_rate=round(base, 4), lift=round(lift, 4),
                         recall=round(a / n_rejected, 4) if n_rejected else 0.0, p_value=p, passed=passed,
                         reason=f"{label}: {reason}")
