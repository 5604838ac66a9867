from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.rollout import Rollout  # noqa: E402


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def make_rollout(completion: str, answer: str = "7", group: str = "g0", **kw: object) -> Rollout:
    fields: dict[str, object] = {
        "rollout_id": kw.pop("rollout_id", "r0"),
        "task": {"id": "t0", "prompt": "3 + 4 =", "answer": answer, "difficulty": 1},
        "prompt": "3 + 4 =",
        "completion": completion,
        "completion_tokens": len(completion.split()),
        "truncated": False,
        "group_id": group,
        "max_completion_length": 48,
    }
    fields.update(kw)
    return Rollout(**fields)  # type: ignore[arg-type]
