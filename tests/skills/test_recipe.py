"""Training settings as one recipe: while training does not move the policy, a single setting can only
score a delta of 0 at the gate (bench/results/policy-movement*), so the offline proposer tries the
triggered ones together in one candidate."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from meta_agent.agents.base import Hypothesis, ProposalContext, Workspace
from meta_agent.agents.skills_proposer import SkillsProposer, recipe_title
from meta_agent.gitops import export_tree, init_harness
from meta_agent.journal import VerdictRecorded
from meta_agent.paths import seed_skills
from meta_agent.skills.runner import ALREADY_APPLIED, prepare_kit
from meta_agent.skills.store import Library, SkillSet
from meta_agent.skills.variants import params_of, tried_in
from sandboxes import Mount, Sandbox
from tests.skills.test_library import _report

SEEDS = SkillSet(seed=Library.load(seed_skills(), writable=False))


def _proposals(k: int, history: list[VerdictRecorded] | None = None, **metrics: float) -> list[Hypothesis]:
    """The seed library's proposals for a math report like the efficacy runs': most groups all-zero, a
    low reward, long truncated completions and a reward the verifier disagrees with."""
    report = _report("math", {"zero_variance_group": 0.7, "truncated": 0.6, "reward_verifier_disagreement": 0.1},
                     reward_mean=0.05, truncation_rate=0.7, probes_rewarded=0.5, entropy_change=-0.2, **metrics)
    ctx = ProposalContext(run_id="r", generation=1, domain="math", report=report, harness_dir=Path("/nonexistent"),
                          skills=SEEDS, seed=0, history=history or [])
    return SkillsProposer(SEEDS).propose(ctx, k)


def test_a_policy_that_does_not_move_gets_its_triggered_training_settings_as_one_candidate() -> None:
    proposed = _proposals(4, selection_noise=0.0)
    assert [h.kind for h in proposed[:2]] == ["validity", "validity"], "reward holes still come first"
    recipe = proposed[2]
    assert recipe.skills_used[0] == "learning-rate", "the measurability skill leads the recipe"
    assert {"group-size", "difficulty-curriculum", "clip-higher", "mask-truncated"} <= set(recipe.skills_used)
    assert all(SEEDS.get(name).meta.training_setting for name in recipe.skills_used)
    assert recipe.kind == "performance" and "noise floor 0.000" in recipe.evidence
    assert recipe.params["learning-rate"] == {"learning_rate": 1e-4}
    assert recipe.params["difficulty-curriculum"] == {"strategy": "easy_first"}
    rest = [name for h in proposed for name in h.skills_used if h is not recipe]
    assert not set(rest) & set(recipe.skills_used), "a recipe member is not proposed alone beside it"
    assert "format-reward" in rest or "overlong-shaping" in rest, "reward shaping stays a candidate of its own"


def test_a_long_recipe_title_counts_the_skills_it_cannot_name_instead_of_cutting_one() -> None:
    names = ["learning-rate", "difficulty-curriculum", "mask-truncated", "clip-higher", "group-size"]
    assert recipe_title(names[:2]) == "Apply skills learning-rate + difficulty-curriculum together"
    title = recipe_title(names)
    assert len(title) <= 100 and title.endswith(" and 2 more together"), title
    assert all(name in title.split() for name in names[:3])
    assert recipe_title(["x" * 120, "y"]) == "Apply 2 skills together"
    Hypothesis(title=title, failure_mode="f", evidence="e", intervention="i", kind="performance")


def test_validity_fixes_leave_a_slot_for_the_recipe_while_the_policy_does_not_move() -> None:
    """Two candidates a generation and two triggered validity skills: the recipe still gets one slot, or a
    generation passes in which no candidate could move the policy (the efficacy run's generation 0)."""
    two = _proposals(2, selection_noise=0.0)
    assert [h.kind for h in two] == ["validity", "performance"]
    assert two[1].skills_used[0] == "learning-rate" and len(two[1].skills_used) > 1
    later = _proposals(4, selection_noise=0.0)
    assert two[0].title == later[0].title and later[1].kind == "validity", \
        "the validity skill it moved past is still proposed when there is room"
    assert [h.kind for h in _proposals(1, selection_noise=0.0)] == ["validity"], "one slot: reward holes first"
    moving = _proposals(2, selection_noise=0.1)
    assert [h.kind for h in moving] == ["validity", "validity"], "a policy that moves needs no reserved slot"


def test_a_policy_that_moves_gets_one_change_per_candidate() -> None:
    proposed = _proposals(8, selection_noise=0.1)
    assert proposed and all(len(h.skills_used) == 1 for h in proposed)
    assert "learning-rate" not in {h.skills_used[0] for h in proposed}


def test_each_member_of_a_tried_recipe_counts_as_tried_with_its_own_params() -> None:
    recipe = _proposals(3, selection_noise=0.0)[2]
    record = VerdictRecorded(cand_id="r/0-2", stage="gate", reason="", kind="performance", skills=recipe.skills_used,
                             params=recipe.params, verdict="rejected", delta=0.0)
    tried = tried_in([record], SEEDS.get("learning-rate").meta)
    assert [t.params for t in tried] == [{"learning_rate": 1e-4}]
    assert params_of(recipe.params, recipe.skills_used, "group-size") == {"group_size": 8}
    assert params_of({"learning_rate": 2e-4}, ["learning-rate", "x"], "learning-rate") == {"learning_rate": 2e-4}, \
        "a multi-skill hypothesis with flat params (an LLM's) keeps them"
    after = _proposals(8, [record], selection_noise=0.0)
    assert all(len(h.skills_used) == 1 for h in after), "a tried recipe is not proposed again"
    variants = {h.skills_used[0]: h.params for h in after if h.skills_used[0] in recipe.skills_used}
    assert variants["learning-rate"] == {"learning_rate": 2e-4}, "its members' other variants follow, one by one"


def _implement(sandbox: Sandbox, tmp_path: Path, h: Hypothesis, settings: dict[str, Any] | None = None
               ) -> tuple[Any, dict[str, Any]]:
    work = export_tree(init_harness(tmp_path / "harness", "math"), "HEAD", tmp_path / "work")
    if settings:
        config = yaml.safe_load((work / "harness.yaml").read_text())
        for section, values in settings.items():
            config[section].update(values)
        (work / "harness.yaml").write_text(yaml.safe_dump(config))
    kit = prepare_kit(tmp_path / "kit")
    mounts = [Mount(kit)] + [Mount(SEEDS.get(n).path) for n in h.skills_used]
    with sandbox.open(work, mounts=mounts) as session:
        done = SkillsProposer(SEEDS).implement(h, Workspace(path=work, session=session, kit_dir=kit))
    return done, yaml.safe_load((work / "harness.yaml").read_text())


def _recipe(*names: str, **params: dict[str, Any]) -> Hypothesis:
    return Hypothesis(title="recipe", failure_mode="selection_noise", evidence="e", intervention="i",
                      kind="performance", skills_used=list(names),
                      params={n: params.get(n.replace("-", "_"), dict(SEEDS.get(n).meta.params)) for n in names})


def test_implementing_a_recipe_applies_every_member_and_skips_what_the_harness_has(sandbox: Sandbox,
                                                                                   tmp_path: Path) -> None:
    h = _recipe("learning-rate", "group-size", "difficulty-curriculum", "mask-truncated")
    done, config = _implement(sandbox, tmp_path / "a", h, {"rl": {"mask_truncated_completions": True}})
    assert done.ok, done.reason
    assert config["rl"]["learning_rate"] == 1e-4 and config["rl"]["num_generations"] == 8
    assert config["rl"]["prompts_per_step"] == 1 and config["curriculum"]["strategy"] == "easy_first"
    assert "already in the harness: mask-truncated" in done.summary

    had = _implement(sandbox, tmp_path / "b", _recipe("clip-higher", "mask-truncated"),
                     {"rl": {"mask_truncated_completions": True, "epsilon_high": 0.28}})[0]
    assert not had.ok and had.reason.startswith(ALREADY_APPLIED), "nothing changed: not a test of the recipe"

    bad = _implement(sandbox, tmp_path / "c", _recipe("group-size", "learning-rate", group_size={"group_size": 3},
                                                      learning_rate={"learning_rate": 1.0}))[0]
    assert not bad.ok and bad.reason.startswith("no skill of the recipe applied")
    assert "skill learning-rate of the recipe" in bad.reason and "outside" in bad.reason
    assert "skill group-size of the recipe" in bad.reason and "does not divide" in bad.reason
    assert bad.not_applied == ["group-size", "learning-rate"]


def test_a_recipe_member_that_cannot_apply_to_this_harness_is_left_out_not_the_whole_recipe(
        sandbox: Sandbox, tmp_path: Path) -> None:
    """The SWE demo's recipe (1 prompt x 4 completions per step) carried group-size 8, which cannot divide
    4: the whole candidate, warm start included, failed at implementation and was never trained."""
    h = _recipe("learning-rate", "group-size", "difficulty-curriculum")
    done, config = _implement(sandbox, tmp_path, h, {"rl": {"prompts_per_step": 1, "num_generations": 4}})
    assert done.ok, done.reason
    assert config["rl"]["learning_rate"] == 1e-4 and config["curriculum"]["strategy"] == "easy_first"
    assert config["rl"]["num_generations"] == 4 and config["rl"]["prompts_per_step"] == 1
    assert done.not_applied == ["group-size"]
    assert "not applied: group-size (cannot apply: group size 8 does not divide the 4 completions" in done.summary


def test_what_a_failing_recipe_member_wrote_before_it_failed_is_taken_back(sandbox: Sandbox, tmp_path: Path) -> None:
    library = tmp_path / "lib"
    folder = library / "half-done"
    shutil.copytree(seed_skills() / "clip-higher", folder)
    md = folder / "SKILL.md"
    md.write_text(md.read_text().replace("name: clip-higher", "name: half-done"))
    (folder / "apply.py").write_text(
        "from pathlib import Path\nfrom skillkit import set_setting\n\n\n"
        "def apply(harness_dir: Path, params: dict) -> str:\n"
        "    set_setting(harness_dir, 'rl.learning_rate', 0.5)\n"
        "    (Path(harness_dir) / 'stray.txt').write_text('half')\n"
        "    raise RuntimeError('gave up half way')\n")
    skills = SkillSet(seed=Library.load(seed_skills(), writable=False), user=Library.load(library))
    h = Hypothesis(title="recipe", failure_mode="selection_noise", evidence="e", intervention="i",
                   kind="performance", skills_used=["half-done", "difficulty-curriculum"],
                   params={"half-done": {}, "difficulty-curriculum": {"strategy": "easy_first"}})
    work = export_tree(init_harness(tmp_path / "harness", "math"), "HEAD", tmp_path / "work")
    before = yaml.safe_load((work / "harness.yaml").read_text())["rl"]["learning_rate"]
    kit = prepare_kit(tmp_path / "kit")
    with sandbox.open(work, mounts=[Mount(kit), Mount(folder), Mount(seed_skills())]) as session:
        done = SkillsProposer(skills).implement(h, Workspace(path=work, session=session, kit_dir=kit))
    assert done.ok and done.not_applied == ["half-done"] and "gave up half way" in done.summary
    assert yaml.safe_load((work / "harness.yaml").read_text())["rl"]["learning_rate"] == before
    assert not (work / "stray.txt").exists()
