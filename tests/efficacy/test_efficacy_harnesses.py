"""The harnesses the efficacy benchmark makes for its arms: what a merged change was (config or code, and
which part), and the evolved harness without one change (leave-one-out), made by git's own merge so that a
later change on the same lines is reported instead of silently undone."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from bench.efficacy_lib.harnesses import copy_harness, merged_changes, same_files, without_change
from meta_agent.eventlog import EventLog
from meta_agent.gitops import author_env, commit_dir, export_tree, init_harness, merge_no_ff
from meta_agent.journal import Merged, VerdictRecorded


def _change(repo, work: Path, branch: str, edit) -> str:  # type: ignore[no-untyped-def]
    main = repo.commit("main").hexsha
    tree = export_tree(repo, main, work / branch)
    edit(tree)
    commit_dir(repo, tree, main, branch, f"change {branch}")
    return merge_no_ff(repo, branch, f"Merge {branch}")


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_changes_are_named_config_or_code_and_each_can_be_left_out_alone(tmp_path: Path) -> None:
    harness = tmp_path / "harness"
    repo = init_harness(harness, "math")
    (tmp_path / "run").mkdir()
    log = EventLog(tmp_path / "run")
    edits = {
        "g0-c0": lambda t: _replace(t / "harness.yaml", "learning_rate: 2.0e-5", "learning_rate: 1.0e-4"),
        "g0-c1": lambda t: (t / "harness" / "math" / "rewards.py").write_text(
            (t / "harness" / "math" / "rewards.py").read_text() + "\n# shaped\n"),
        "g1-c0": lambda t: _replace(t / "harness.yaml", "learning_rate: 1.0e-4", "learning_rate: 3.0e-4"),
    }
    for i, (cand, edit) in enumerate(edits.items()):
        merge = _change(repo, tmp_path / "work", cand, edit)
        log.append(VerdictRecorded(cand_id=cand, verdict="promoted", stage="gate", reason="r", kind="performance",
                                   delta=0.1 * (i + 1), title=f"title {cand}"))
        log.append(Merged(cand_id=cand, merge_commit=merge, branch=cand))
    changes = merged_changes(tmp_path / "run", harness)
    assert [(c.cand_id, c.kind, c.parts) for c in changes] == [
        ("g0-c0", "config", ["rl.learning_rate"]), ("g0-c1", "code", ["reward"]),
        ("g1-c0", "config", ["rl.learning_rate"])]
    assert [c.delta for c in changes] == pytest.approx([0.1, 0.2, 0.3]), "each change's gate delta"
    assert changes[1].title == "title g0-c1"

    final = repo.commit("main")
    without_reward = tmp_path / "without-g0-c1"
    assert without_change(harness, without_reward, changes[1]) is None
    left = without_reward / ".git"
    assert left.is_dir() and repo.commit("main").hexsha == final.hexsha, "the evolved harness is not touched"
    out = git.Repo(without_reward)
    assert out.head.commit.parents[0].hexsha == final.hexsha, "one commit on top of the final main"
    rewards = out.git.show("HEAD:harness/math/rewards.py")
    assert "# shaped" not in rewards and "learning_rate: 3.0e-4" in out.git.show("HEAD:harness.yaml")

    # the first rate change was overwritten by the later one on the same line: it cannot be undone alone
    reason = without_change(harness, tmp_path / "without-g0-c0", changes[0])
    assert reason is not None and "overlap" in reason


def test_a_reference_harness_exists_for_math_and_code_and_differs_from_the_template_only_in_its_settings(
        tmp_path: Path) -> None:
    import yaml

    from bench.efficacy_lib.reference import GRPO_REFERENCE, make_reference_harness

    for domain in ("math", "code"):
        dest = make_reference_harness(tmp_path / domain, domain)
        repo = git.Repo(dest)
        assert repo.git.diff("--name-only", "HEAD~1", "HEAD").split() == ["harness.yaml"], domain
        config = yaml.safe_load((dest / "harness.yaml").read_text())
        for section, values in GRPO_REFERENCE.items():
            assert {k: config[section][k] for k in values} == values, (domain, section)
        assert not repo.is_dirty(untracked_files=True), "the checkout is the reference commit"


def test_the_swe_reference_trains_under_the_protocol_it_is_scored_under(tmp_path: Path) -> None:
    """The template trains SWE episodes of 3 turns of 48 tokens while the sealed evaluator gives 6 of 128: a
    policy trained on replies too short for an edit. The reference matches the protocol, and its settings
    are ones the harness accepts."""
    import subprocess
    import sys

    import yaml

    from bench.efficacy_lib.reference import REFERENCE, make_reference_harness
    from meta_agent.domains.settings import ScaffoldSettings

    dest = make_reference_harness(tmp_path / "swe", "swe")
    config = yaml.safe_load((dest / "harness.yaml").read_text())
    protocol = ScaffoldSettings()
    assert config["domain_settings"]["max_turns"] == protocol.max_turns
    assert config["domain_settings"]["turn_tokens"] == protocol.turn_tokens == config["rl"]["max_completion_length"]
    assert config["domain_settings"]["test_timeout_s"] == 60, "the template's other agent settings stay"
    assert {k: config["rl"][k] for k in REFERENCE["swe"]["rl"]} == REFERENCE["swe"]["rl"]
    checked = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from harness.config import load_config; "
         "from harness.swe.settings import agent_settings; agent_settings(load_config(Path(sys.argv[1])))",
         str(dest / "harness.yaml")], cwd=dest, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_a_harness_is_the_same_job_only_when_its_files_are_the_same(tmp_path: Path) -> None:
    reference = init_harness(tmp_path / "reference", "math")
    final = tmp_path / "final"
    copy_harness(Path(reference.working_dir), final)
    repo = git.Repo(final)
    repo.git.commit("--allow-empty", "-m", "a merge that changed no file", env=author_env())
    assert same_files(final, Path(reference.working_dir)), "history differs, files do not: the same training"
    (final / "harness.yaml").write_text((final / "harness.yaml").read_text() + "\n# one byte more\n")
    assert same_files(final, Path(reference.working_dir)), "an uncommitted edit is not what `rollout` trains"
    repo.git.commit("-am", "a merged change", env=author_env())
    assert not same_files(final, Path(reference.working_dir))
