"""The search control `--proposer random`: what it proposes ignores the report, is the same on a resume (its
draws are seeded), stays inside each skill's declared parameter ranges and the run's domain."""

from __future__ import annotations

from pathlib import Path

from meta_agent.agents.base import Hypothesis, ProposalContext
from meta_agent.agents.random_proposer import MatchedRandomProposer, RandomProposer
from meta_agent.agents.skills_proposer import SkillsProposer
from meta_agent.config import EvolveConfig
from meta_agent.proposers import PROPOSERS
from meta_agent.skills.store import SkillSet
from tests.skills.test_library import _report
from tests.skills.test_recipe import SEEDS


def _propose(domain: str, generation: int, seed: int = 0, k: int = 3, **labels: float) -> list[Hypothesis]:
    report = _report(domain, labels, reward_mean=0.05, selection_noise=0.0)
    ctx = ProposalContext(run_id="r", generation=generation, domain=domain, report=report,
                          harness_dir=Path("/nonexistent"), skills=SEEDS, seed=seed, history=[])
    return RandomProposer(SEEDS, seed=seed).propose(ctx, k)


def test_the_random_control_draws_skills_blind_to_the_report_and_repeats_its_draw_on_resume() -> None:
    first = _propose("math", generation=0)
    assert len(first) == 3 and len({h.skills_used[0] for h in first}) == 3, "k different skills"
    assert first == _propose("math", generation=0), "a resumed run proposes the same"
    other_report = _propose("math", generation=0, truncated=0.9, zero_variance_group=0.8)
    assert [h.skills_used for h in other_report] == [h.skills_used for h in first], "the report is not read"
    draws = {tuple(h.skills_used[0] for h in _propose("math", generation=g, seed=s)) for g in range(4) for s in (0, 1)}
    assert len(draws) > 1, "other generations and seeds draw other skills"
    for h in first:
        skill = SEEDS.get(h.skills_used[0])
        assert skill.meta.active_in("math") and skill.apply_script is not None
        for name, values in skill.meta.param_ranges.items():
            assert h.params[name] in values, (h.title, name)
        assert h.title.startswith("Random control: apply skill ") and "random" in h.evidence


def test_the_random_control_never_offers_another_domains_skills_and_is_a_registered_proposer() -> None:
    for g in range(6):
        for h in _propose("math", generation=g, k=20):
            assert not h.skills_used[0].startswith("swe-"), h.title
    assert len(_propose("math", generation=0, k=100)) == len(
        [s for s in SEEDS.all() if s.meta.active_in("math") and s.apply_script is not None]), "at most every skill"
    assert PROPOSERS.get("random") is RandomProposer
    cfg = EvolveConfig(domain="math", proposer="random", seed=4)
    built = RandomProposer.from_config(cfg, SkillSet(seed=SEEDS.seed), Path("/nonexistent"))
    assert built.seed == 4


def test_the_matched_control_proposes_as_many_as_the_skills_proposer_would_and_still_blind() -> None:
    """Against the skills proposer, the control must not search with more candidates than it: a generation in
    which no untried skill fires gets none from either."""
    counts = set()
    for labels in ({}, {"truncated": 0.9}, {"truncated": 0.9, "zero_variance_group": 0.8, "hedging": 0.5}):
        report = _report("math", labels, reward_mean=0.05, selection_noise=0.0)
        for generation in range(3):
            ctx = ProposalContext(run_id="r", generation=generation, domain="math", report=report,
                                  harness_dir=Path("/nonexistent"), skills=SEEDS, seed=0, history=[])
            wanted = len(SkillsProposer(SEEDS, seed=0).propose(ctx, 3))
            matched = MatchedRandomProposer(SEEDS, seed=0).propose(ctx, 3)
            counts.add(wanted)
            assert len(matched) == wanted, (labels, generation)
            blind = RandomProposer(SEEDS, seed=0).propose(ctx, wanted)
            assert [h.skills_used for h in matched] == [h.skills_used for h in blind], "drawn as the random control"
            assert all(h.title.startswith("Random control") for h in matched)
    assert len(counts) > 1, "the reports above make the skills proposer fill different numbers of slots"
    assert PROPOSERS.get("random-matched") is MatchedRandomProposer
    cfg = EvolveConfig(domain="math", proposer="random-matched", seed=3)
    built = PROPOSERS.get(cfg.proposer).from_config(cfg, SkillSet(seed=SEEDS.seed), Path("/nonexistent"))  # type: ignore[attr-defined]
    assert isinstance(built, MatchedRandomProposer) and built.seed == 3 and built.name == "random-matched"
