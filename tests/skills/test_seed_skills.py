"""Every seed skill applies cleanly to a fresh harness and changes behaviour as its SKILL.md claims.

Each skill folder carries examples.yaml: rollouts and the change the skill must make to
their reward, filter weight or labels (checked by replaying them before and after), or
the harness.yaml setting it must set.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from meta_agent.backtest.train_stage import grown_budget
from meta_agent.contract import ReplayRecord, RolloutRecord, Task, write_jsonl
from meta_agent.gitops import export_tree, init_harness
from meta_agent.harness_runner import HarnessRunner
from meta_agent.paths import seed_skills
from meta_agent.skills.runner import prepare_kit, run_apply
from meta_agent.skills.store import Library, load_skill
from sandboxes import Mount, Sandbox
from tests.skills.libraries import apply_twice

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`

SEEDS = sorted(p.name for p in seed_skills().iterdir() if (p / "SKILL.md").is_file())


def test_the_seed_library_has_at_least_eight_valid_skills() -> None:
    lib = Library.load(seed_skills(), writable=False)
    assert lib.problems == []
    assert len(lib.skills) >= 8
    assert all(s.apply_script is not None for s in lib.skills.values())


def _tree_diff(base: Path, files: dict[str, str], work: Path) -> str:
    """The unified diff an episode that left `files` in the base tree would have produced."""
    shutil.copytree(base, work)
    repo = git.Repo.init(work)
    repo.git.add(A=True)
    repo.index.commit("base")
    for rel, text in files.items():
        (work / rel).write_text(text)
    repo.git.add(A=True)
    return str(repo.git.diff("--cached")) + "\n"


def _swe_records(example: dict[str, Any], data: Path) -> tuple[list[Task], list[RolloutRecord]]:
    """One task (a repo archive beside the tasks file) and rollouts whose diffs edit it."""
    base = data / "base"
    base.mkdir(parents=True)
    for rel, text in example["repo"].items():
        (base / rel).write_text(text)
    (data / "swe").mkdir()
    with tarfile.open(data / "swe" / "t.tar", "w") as tar:
        for rel in example["repo"]:
            tar.add(base / rel, arcname=rel)
    task = Task(id="t", prompt="tests fail", metadata={"archive": "swe/t.tar", "python_path": ["."],
                                                       **example["task"]})
    records = []
    for r in example["rollouts"]:
        diff = _tree_diff(base, r.get("files", {}), data / f"work-{r['id']}")
        records.append(RolloutRecord(
            rollout_id=r["id"], step=1, task_id="t", group_id=r["group"], prompt="tests fail", completion="...",
            rewards={}, reward=0.0, advantage=0.0, prompt_tokens=10, completion_tokens=10, truncated=False,
            labels=[], harness_commit="x", verified=r.get("verified"),
            extra={"diff": diff, "end_reason": "submit", "exit_codes": [], **r.get("extra", {})}))
    return [task], records


def _records(example: dict[str, Any], data: Path) -> tuple[list[Task], list[RolloutRecord]]:
    if example["domain"] == "swe" and "repo" in example:  # a settings-only example has no rollouts to score
        return _swe_records(example, data)
    tasks, records = {}, []
    for r in example.get("rollouts", []):
        tid = f"task-{r['answer']}"
        tasks[tid] = Task(id=tid, prompt=f"What is the answer? ({r['answer']})", answer=r["answer"], difficulty=1)
        records.append(RolloutRecord(
            rollout_id=r["id"], step=1, task_id=tid, group_id=r["group"], prompt=tasks[tid].prompt,
            completion=r["completion"], rewards={}, reward=0.0, advantage=0.0, prompt_tokens=10,
            completion_tokens=r.get("completion_tokens", len(r["completion"].split())),
            truncated=r.get("truncated", False), labels=[], harness_commit="x", verified=r.get("verified"),
        ))
    return list(tasks.values()), records


def _replay(sandbox: Sandbox, work: Path, data: Path, out: Path) -> dict[str, ReplayRecord]:
    with HarnessRunner(sandbox, work, commit="test", readable=[data], writable=[out.parent]) as h:
        return {r.rollout_id: r for r in h.replay(rollouts=data / "rollouts.jsonl", tasks=data / "tasks.jsonl",
                                                  out=out)}


@pytest.mark.parametrize("name", SEEDS)
def test_seed_skill_changes_behaviour_as_claimed(name: str, sandbox: Sandbox, tmp_path: Path) -> None:
    skill = load_skill(seed_skills() / name)
    example = yaml.safe_load((skill.path / "examples.yaml").read_text())
    repo = init_harness(tmp_path / "harness", example["domain"])
    before_dir = export_tree(repo, "HEAD", tmp_path / "before")
    after_dir = tmp_path / "after"
    shutil.copytree(before_dir, after_dir)
    data = tmp_path / "data"
    tasks, records = _records(example, data)
    write_jsonl(data / "tasks.jsonl", tasks)
    write_jsonl(data / "rollouts.jsonl", records)

    kit = prepare_kit(tmp_path / "kit")
    with sandbox.open(after_dir, mounts=[Mount(kit), Mount(skill.path)]) as session:
        outcome = run_apply(session, kit, skill, after_dir, skill.meta.params)
    assert outcome.ok, outcome.reason

    settings = yaml.safe_load((after_dir / "harness.yaml").read_text())
    for check in example.get("settings", []):
        value: Any = settings
        for part in check["setting"].split("."):
            value = value[part]
        assert value == check["becomes"], f"{check['setting']} is {value!r}"
    # A skill the template's own budget refuses before training could never be merged from it: the demo's
    # warm start once raised 3 turns x 48 tokens to 5 x 128 and was refused for it (docs/swe-tasks.md)
    main = repo.head.commit.hexsha
    shutil.copy(after_dir / "harness.yaml", Path(repo.working_dir) / "harness.yaml")
    repo.git.add(A=True)
    applied = repo.index.commit(f"apply {name}").hexsha
    assert grown_budget(repo, applied, main) is None

    if records:
        before = _replay(sandbox, before_dir, data, tmp_path / "out-before" / "replay.jsonl")
        after = _replay(sandbox, after_dir, data, tmp_path / "out-after" / "replay.jsonl")
        for check in example["expect"]:
            rid = check["rollout"]
            if "label" in check:
                assert (check["label"] in after[rid].labels) is check["present"], (rid, after[rid].labels)
            elif "becomes" in check:
                assert getattr(after[rid], check["field"]) == pytest.approx(check["becomes"]), rid
            else:
                old, new = getattr(before[rid], check["field"]), getattr(after[rid], check["field"])
                expected = {"up": new > old, "down": new < old, "same": new == pytest.approx(old)}[check["change"]]
                assert expected, f"{rid}: {check['field']} {old} -> {new}, expected {check['change']}"

    with HarnessRunner(sandbox, after_dir, commit="test") as h:
        assert "passed" in h.selftest().stdout


def test_applying_a_skill_twice_is_reported_not_duplicated(sandbox: Sandbox, tmp_path: Path) -> None:
    first, second, work = apply_twice(sandbox, tmp_path, "dynamic-sampling")
    assert first.ok
    assert not second.ok and "already applied" in second.reason
    assert (work / "harness" / "filters.py").read_text().count("def drop_zero_variance") == 1
