"""Train / selection / test assignment of code problems by a hash of their id.

Each problem's split depends on its id alone, so adding a source, importing another file, or a
problem dropped on one machine never moves another problem between splits; within a split,
problems are ordered by the same hash and the configured size takes a prefix.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Literal

from meta_agent.code_tasks.problem import CodeProblem

SplitName = Literal["train", "selection", "test"]
TEST_SHARE, SELECTION_SHARE = 0.3, 0.2
"""The rest (0.5) is train. Sealed splits get half the problems: the evaluator needs many tasks
for a tight confidence interval, and HumanEval alone has only 164."""


def _unit(problem_id: str) -> float:
    return int(hashlib.sha256(f"split:{problem_id}".encode()).hexdigest()[:12], 16) / 16**12


def split_of(problem_id: str) -> SplitName:
    u = _unit(problem_id)
    return "test" if u < TEST_SHARE else "selection" if u < TEST_SHARE + SELECTION_SHARE else "train"


def assign(problems: list[CodeProblem], sizes: dict[SplitName, int]) -> dict[SplitName, list[CodeProblem]]:
    dupes = sorted(i for i, n in Counter(p.id for p in problems).items() if n > 1)
    if dupes:
        raise ValueError(f"code problems with the same id in two sources: {dupes[:5]}; rename them in the "
                         "imported files (ids are prefixed with the file name)")
    out: dict[SplitName, list[CodeProblem]] = {"train": [], "selection": [], "test": []}
    for p in sorted(problems, key=lambda p: _unit(p.id)):
        out[split_of(p.id)].append(p)
    return {name: out[name][: sizes[name]] for name in out}
