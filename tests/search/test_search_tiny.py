"""The search on the tiny policy, one run for all three checks (the run is the slow part): its only skills
are `group-size` and `difficulty-curriculum`, with the confirmation rung and one archive parent per
generation. (No measurability skill is active, so the two training settings are not proposed as one
recipe: tests/skills/test_recipe.py and tests/evolve/test_evolve_e2e.py cover recipes.)

- Parameter variants: generation 0 tries each skill's default; with nothing untried left, generation 1
  tries the next value of their ranges instead of proposing nothing.
- Archive parents: one of generation 1's candidates is built on a generation-0 candidate that passed
  every stage without being promoted, of the other skill (novelty), merged onto main first.
- Budget split: a candidate the gate did not promote on the short train stage (and that did not score
  below main) trains `confirm_steps` more steps beside main's run trained as much more, and its verdict
  is the gate's decision on that longer run; the next generation still starts from a run of `steps`,
  and the benchmark counts the longer rung as search compute.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest
import yaml

from bench.efficacy_lib.compute import of_evolve
from meta_agent.journal import CandidateCreated, GenerationDone, ParentsChosen, StageDone, VerdictRecorded
from meta_agent.paths import seed_skills
from meta_agent.review.candidates import read_candidates
from meta_agent.skills.evidence import set_status
from meta_agent.skills.store import default_skill_set
from tests.conftest import journal
from tests.evolve.conftest import meta_agent, tiny_config

pytestmark = pytest.mark.slow

STEPS, CONFIRM = 1, 2


def only(keep: set[str], data: Path) -> None:
    """Retire every other seed skill in math, in the user library under `data` (as `skills retire` does)."""
    skills = default_skill_set()
    for folder in seed_skills().iterdir():
        if (folder / "SKILL.md").is_file() and folder.name not in keep:
            set_status(skills, folder.name, retired=True, domain="math")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search")
    data, run_dir = root / "data", root / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("META_AGENT_DATA", str(data))
        only({"group-size", "difficulty-curriculum"}, data)
    config = tiny_config(run_dir, generations=2, candidates=2, train_steps=STEPS, confirm_steps=CONFIRM,
                         archive_parents=1, noise_reruns=1, control="none", skills=[],
                         executor={"kind": "local", "parallel": 2})  # backtests two at a time: same decisions
    # the harness trains by script (tests/scripted_harness): tested here is what the search proposes and runs
    res = meta_agent("evolve", "--config", str(config), data_dir=data, scripted=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return run_dir


def _verdicts(run: Path, g: int) -> list[dict[str, object]]:
    """Generation g's verdicts, in journal order (a confirmed candidate has two)."""
    return [v for v in journal(run, VerdictRecorded) if f"/{g}-" in str(v["cand_id"])]


def _tried(run: Path, g: int) -> set[tuple[str, str]]:
    return {(str(v["skills"][0]), json.dumps(v["params"], sort_keys=True))  # type: ignore[index]
            for v in _verdicts(run, g)}


def test_the_second_generation_searches_the_ranges_of_the_skills_the_first_tried(
        run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def variant(skill: str, **params: object) -> tuple[str, str]:
        return skill, json.dumps(params, sort_keys=True)

    assert _tried(run, 0) == {variant("difficulty-curriculum", strategy="easy_first"),
                              variant("group-size", group_size=8)}
    assert _tried(run, 1) == {variant("difficulty-curriculum", strategy="pass_rate"),
                              variant("group-size", group_size=2)}, \
        "with every triggered skill tried, the next values of their ranges"
    repo = git.Repo(run / "harness")
    created = {c["title"]: c for c in journal(run, CandidateCreated) if c["gen"] == 1}
    curriculum = created["Apply skill difficulty-curriculum (strategy=pass_rate)"]
    harness = yaml.safe_load(repo.git.show(f"{curriculum['commit']}:harness.yaml"))
    assert harness["curriculum"]["strategy"] == "pass_rate", "the candidate's harness holds the variant"
    monkeypatch.setenv("META_AGENT_DATA", str(run.parent / "data"))
    evidence = default_skill_set().get("group-size").meta.evidence
    assert [e.params for e in evidence] == [{"group_size": 8}, {"group_size": 2}], \
        "each variant's test is recorded on the skill with its parameters"


def test_a_candidate_builds_on_an_archived_one_of_another_skill(run: Path) -> None:
    repo = git.Repo(run / "harness")
    chosen = [p for p in journal(run, ParentsChosen) if p["parents"]]
    assert chosen, "generation 1 built nothing on the archive"
    created = {c["cand_id"]: c for c in journal(run, CandidateCreated)}
    summary = (run / "summary.md").read_text()
    history = {r.cand_id: r for r in read_candidates(repo)}
    for event in chosen:
        for k, (archived, base) in event["parents"].items():
            parent = created[archived]
            child = next(c for c in created.values() if c["gen"] == 1 and c["k"] == int(k))
            assert child["parent"] == archived
            assert f"`{child['cand_id']}` {child['title']} (built on `{archived}`)" in summary, "the reviewer sees it"
            assert history[child["cand_id"]].built_on == archived, "and so does one who reads git alone"
            assert history[archived].built_on is None
            assert not set(child["skills"]) & set(parent["skills"]), "novelty: not the same knob twice"
            [v] = [v for v in _verdicts(run, 0) if v["cand_id"] == archived][-1:]
            assert v["verdict"] == "rejected" and v["stage"] == "gate" and float(str(v["delta"])) >= 0
            assert repo.is_ancestor(parent["commit"], child["commit"]), "the archived change is in the candidate"
            assert repo.is_ancestor(base, child["commit"]) and len(repo.commit(base).parents) == 2
            assert not repo.is_ancestor(parent["commit"], repo.commit("main")), "main got nothing that was not promoted"
            def settings(commit: str) -> dict[str, object]:
                config = yaml.safe_load(repo.git.show(f"{commit}:harness.yaml"))
                return {f"{section}.{key}": v for section in ("rl", "curriculum") for key, v in config[section].items()}
            on_main, in_parent, in_child = (settings(repo.commit(base).parents[0].hexsha), settings(parent["commit"]),
                                            settings(child["commit"]))
            archived_change = {key: v for key, v in in_parent.items() if on_main.get(key) != v}
            assert archived_change and all(in_child[key] == v for key, v in archived_change.items()), \
                "the candidate holds the archived change"
            assert in_child != in_parent, "and its own change on top"


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def test_an_unproven_candidate_is_judged_again_on_a_longer_run(run: Path) -> None:
    for v in journal(run, VerdictRecorded):
        short = v
        if not (short["verdict"] == "rejected" and short["stage"] == "gate" and (short["delta"] or 0) >= 0):
            continue  # promoted or worse than main on the short rung: nothing to confirm
        g, k = (int(x) for x in str(short["cand_id"]).rsplit("/", 1)[1].split("-"))
        gen = run / f"gen-{g:03d}"
        again = [x for x in journal(run, VerdictRecorded) if x["cand_id"] == short["cand_id"]]
        assert len(again) == 2, "the longer rung records a second verdict"
        confirmed = again[1]
        [stage] = [s for s in journal(run, StageDone) if s["cand_id"] == short["cand_id"] and s["stage"] == "confirm"]
        metrics = stage["metrics"]
        assert _lines(gen / f"cand-{k}" / "confirm" / "metrics.jsonl") == CONFIRM
        assert _lines(gen / "confirm-control" / "metrics.jsonl") == CONFIRM
        assert metrics["steps"] == STEPS + CONFIRM
        control = json.loads((gen / "confirm-control" / "eval.json").read_text())
        assert metrics["control_score"] == pytest.approx(control["score"]["mean"]), "compared with the longer control"
        assert confirmed["delta"] == pytest.approx(metrics["delta"]) and confirmed["ci"] == metrics["ci"], \
            "the verdict is the gate's decision on the longer run"
        assert metrics["ci_level"] == pytest.approx(1 - 0.05 / (2 * 3)), \
            "Bonferroni over the whole run: 2 generations x (K=2 candidates + 1 confirmation)"
        assert "confirmation rung" in str(confirmed["reason"])
        done = next(d for d in journal(run, GenerationDone) if d["gen"] == g)
        assert "confirm" not in str(done["next_policy"]), "the next generation starts from a run of `steps`"
        break
    else:
        pytest.fail("no candidate reached the confirmation rung: the test shows nothing")
    compute = of_evolve(run)
    assert compute.evolved.steps == 2 * STEPS, "the evolved policy trained `steps` per generation, no more"
    confirmations = len(list(run.glob("gen-*/cand-*/confirm/metrics.jsonl")))
    controls = len(list(run.glob("gen-*/confirm-control/metrics.jsonl")))
    backtests = len(list(run.glob("gen-*/cand-*/train/metrics.jsonl")))
    noise = len(list(run.glob("gen-*/noise-*/metrics.jsonl")))
    assert compute.search.steps == ((backtests + noise) * STEPS + (confirmations + controls) * CONFIRM), \
        "the longer rung (candidate and control) is counted as search compute"
