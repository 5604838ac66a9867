"""Two winners of one generation that edit the same line: the first is merged, the second is re-applied on
the new main, fails to, and is recorded as `conflict`; the run finishes and `resume` has nothing left to do.
The harness trains by script (tests/scripted_harness): both fixes win on their replay evidence.)"""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from meta_agent.journal import Combined, VerdictRecorded
from tests.conftest import journal
from tests.evolve.conftest import HERE, meta_agent, tiny_config

pytestmark = pytest.mark.slow

CONFLICTING = HERE / "conflict_skills"


def test_a_conflicting_winner_is_recorded_as_conflict_and_the_run_goes_on(tmp_path: Path) -> None:
    run = tmp_path / "run"
    config = tiny_config(run, generations=1, candidates=2, noise_reruns=0, control="none", skills=[str(CONFLICTING)])
    res = meta_agent("evolve", "--config", str(config), data_dir=tmp_path / "data", scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    verdicts: dict[str, list[dict[str, object]]] = {}
    for v in journal(run, VerdictRecorded):
        verdicts.setdefault(str(v["skills"][0]), []).append(v)  # type: ignore[index]
    alone = {name: vs[0]["verdict"] for name, vs in verdicts.items()}
    assert alone == {"conflict-a": "promoted", "conflict-b": "promoted"}, "each fix is a winner on its own"
    final = {name: vs[-1] for name, vs in verdicts.items()}
    first, second = sorted(final, key=lambda n: final[n]["verdict"] != "promoted")
    assert final[first]["verdict"] == "promoted"
    assert (final[second]["verdict"], final[second]["stage"]) == ("conflict", "merge")
    assert "re-implementing it on the new main failed" in str(final[second]["reason"])
    [made] = journal(run, Combined)
    assert made["how"] == "conflict"
    repo = git.Repo(run / "harness")
    merges = [c for c in repo.iter_commits("main", first_parent=True) if len(c.parents) == 2]
    assert len(merges) == 1 and first in merges[0].message
    main_before = repo.commit("main").hexsha
    again = meta_agent("resume", str(run), data_dir=tmp_path / "data", scripted=True)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert git.Repo(run / "harness").commit("main").hexsha == main_before, "resume of a finished run changes nothing"
