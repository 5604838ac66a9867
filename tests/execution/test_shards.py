"""Sealed evaluations in shards (`executor.eval_shards`): a user who shards an evaluation across
workers gets the same per-task answers and the same score as one evaluation, never a different one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_agent.domains.base import EvalResult, Split, merge_shards, shard_of, shards_with_work
from meta_agent.domains.math import MathDomain
from meta_agent.domains.settings import MathSettings


@pytest.mark.parametrize("n", [1, 2, 3, 5, 9])
@pytest.mark.parametrize("align", [1, 2, 4])
def test_shards_cover_every_task_once_in_order_and_cut_only_at_batch_boundaries(n: int, align: int) -> None:
    items = list(range(13))
    shards = [shard_of(items, (i, n), align) for i in range(n)]
    assert [x for s in shards for x in s] == items
    starts = [s[0] for s in shards if s]
    assert all(start % align == 0 for start in starts)
    assert sum(1 for s in shards if s) == shards_with_work(len(items), n, align)  # what a run warns from


def test_a_shard_that_does_not_exist_is_refused() -> None:
    with pytest.raises(ValueError, match="shard 3 of 3"):
        shard_of([1, 2, 3], (3, 3))


def test_sharded_evaluation_equals_the_whole_one(tiny_policy: Path) -> None:
    """Batch 2 over 7 tasks: shards of 2+2+3 tasks decode exactly the whole evaluation's batches."""
    domain = MathDomain(MathSettings(train_size=8, selection_size=7, test_size=4, eval_max_new_tokens=8,
                                     eval_batch_size=2))
    whole = domain.evaluate(tiny_policy, "selection", root=tiny_policy)
    parts = [domain.evaluate(tiny_policy, "selection", root=tiny_policy, shard=(i, 3)) for i in range(3)]
    assert [len(p.results) for p in parts] == [2, 2, 3]
    merged = merge_shards(parts)
    assert [r.model_dump() for r in merged.results] == [r.model_dump() for r in whole.results]
    assert merged.score == whole.score
    more = [domain.evaluate(tiny_policy, "selection", root=tiny_policy, shard=(i, 6)) for i in range(6)]
    assert [len(p.results) for p in more].count(0) == 2, "more shards than batches: the rest are empty"
    assert merge_shards(more).score == whole.score


def test_merging_refuses_what_shards_cannot_add_up_to() -> None:
    from meta_agent.domains.code import CodeEvalResult
    from meta_agent.stats import Interval

    part = CodeEvalResult(domain="code", split="test", policy="p", score=Interval(mean=1, low=1, high=1, n=1),
                          results=[], wall_time=0.0, pass_at_k={"pass@5": Interval(mean=1, low=1, high=1, n=1)})
    with pytest.raises(ValueError, match="pass_at_k"):
        merge_shards([part, part])


class DomainWithoutShards(MathDomain):
    """A plugin domain written before shards existed: its evaluate takes no `shard`."""

    settings_model = MathSettings
    default_train_steps = 1
    harness_domain = "math"

    def evaluate(  # type: ignore[override]  # (the point: an older, narrower signature)
            self, policy: Path, split: Split, *, limit: int | None = None, root: Path | None = None,
            on_progress: Any = None) -> EvalResult:
        return super().evaluate(policy, split, limit=limit, root=root, on_progress=on_progress)


def test_sharding_a_domain_whose_evaluate_takes_no_shard_is_refused_before_the_run() -> None:
    from meta_agent.config import EvolveConfig
    from meta_agent.errors import UserError
    from meta_agent.evolve.run import _check_evaluation

    name = f"{__name__}:DomainWithoutShards"
    _check_evaluation(EvolveConfig.model_validate({"domain": name}))  # unsharded: fine
    with pytest.raises(UserError, match=r"eval_shards is 2, but the .*DomainWithoutShards domain's evaluate takes no"):
        _check_evaluation(EvolveConfig.model_validate({"domain": name, "executor": {"eval_shards": 2}}))


def test_a_user_asking_for_more_shards_than_batches_is_told_which_would_idle() -> None:
    """`eval_shards: 4` with the default batch of 64 on 100 selection tasks: only 2 jobs get work. The run
    says so (and how to use the workers) instead of idling half of them silently."""
    from meta_agent.config import EvolveConfig
    from meta_agent.evolve.run import idle_shards

    def config(shards: int, batch: int) -> EvolveConfig:
        return EvolveConfig.model_validate({
            "domain": "math", "executor": {"eval_shards": shards}, "selection_limit": 7, "test_limit": 4,
            "math": {"train_size": 8, "selection_size": 7, "test_size": 4, "eval_batch_size": batch}})

    cfg = config(6, 2)
    note = idle_shards(cfg, MathDomain(cfg.math))
    assert note is not None
    assert "eval_shards is 6" in note
    assert "selection evaluation of 7 tasks in batches of 2 gives 4 of them work" in note
    assert "test evaluation of 4 tasks in batches of 2 gives 2 of them work" in note
    cfg = config(2, 2)
    assert idle_shards(cfg, MathDomain(cfg.math)) is None, "every shard has a batch: nothing to say"
    cfg = config(1, 64)
    assert idle_shards(cfg, MathDomain(cfg.math)) is None, "unsharded: nothing to say"
