from types import SimpleNamespace

from harness.config import HarnessConfig
from harness.scoring import group_advantages, score_batch
from tests.conftest import make_rollout


def test_advantages_are_zero_mean_within_a_group() -> None:
    advs = group_advantages([1.0, 0.0, 0.0, 1.0], "group")
    assert abs(sum(advs)) < 1e-9
    assert advs[0] > 0 > advs[1]


def test_score_batch_labels_a_zero_variance_group() -> None:
    # A domain-independent stand-in: every rollout gets the same reward.
    domain = SimpleNamespace(REWARDS={"flat": lambda r: 0.0}, DIAGNOSTICS={})
    cfg = HarnessConfig(domain="math", rewards={"flat": 1.0})
    batch = [make_rollout("no idea", rollout_id=f"r{i}") for i in range(4)]
    scored = score_batch(domain, cfg, batch)  # type: ignore[arg-type]
    assert all("zero_variance_group" in s.labels for s in scored)
    assert all(s.advantage == 0 for s in scored)
