"""What a git command killed half-way leaves in the harness repo, and how a resume gets past it: git's own
lock files that no process holds any more, and a checkout whose files were half moved to the new main."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import git

from meta_agent.gitops import clear_stale_locks, init_harness, merge_commit, sync_checkout


def _repo_with_branch(tmp_path: Path) -> tuple[git.Repo, str, str]:
    """A harness repo and a branch `cand` that changes two files; returns (repo, old main, branch tip)."""
    repo = init_harness(tmp_path / "harness", "math")
    old = repo.commit("main").hexsha
    files = sorted(p for p in (tmp_path / "harness" / "harness").rglob("*.py"))[:2]
    repo.git.checkout("-b", "cand")
    for f in files:
        f.write_text(f.read_text() + "\n# changed on the branch\n")
    repo.git.commit("-am", "two files")
    tip = repo.commit("cand").hexsha
    repo.git.checkout("main")
    return repo, old, tip


def _half_moved_merge(repo: git.Repo) -> tuple[str, list[str]]:
    """main moved to a merge of `cand`, the index still old, only the first changed file moved on disk."""
    old = repo.commit("main").hexsha
    merge = merge_commit(repo, "cand", "merge cand", "main", None)
    repo.git.update_ref("refs/heads/main", merge)
    changed = repo.git.diff("--name-only", old, merge).splitlines()
    first = Path(repo.working_dir) / changed[0]
    first.write_bytes(repo.git.show(f"{merge}:{changed[0]}").encode() + b"\n")
    return merge, changed


def test_a_lock_left_by_a_killed_git_command_is_removed_and_git_works_again(tmp_path: Path) -> None:
    repo, _old, _tip = _repo_with_branch(tmp_path)
    lock = Path(repo.git_dir) / "refs" / "heads" / "main.lock"
    lock.write_text("half\n")
    (Path(repo.git_dir) / "index.lock").write_text("")
    assert sorted(clear_stale_locks(repo)) == ["index.lock", "refs/heads/main.lock"]
    repo.git.update_ref("refs/heads/main", repo.commit("cand").hexsha)  # refused while the lock was there
    repo.git.add("-A")


def test_a_lock_a_live_git_process_holds_is_left_alone(tmp_path: Path) -> None:
    repo, _old, _tip = _repo_with_branch(tmp_path)
    lock = Path(repo.git_dir) / "index.lock"
    holder = subprocess.Popen(["python3", "-c", f"f = open({str(lock)!r}, 'w'); import time; time.sleep(60)"])
    try:
        for _ in range(100):
            if lock.exists():
                break
            time.sleep(0.05)
        time.sleep(0.2)
        assert clear_stale_locks(repo) == [] and lock.exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_checkout_killed_half_way_through_the_move_to_the_new_main_is_finished(tmp_path: Path) -> None:
    repo, _old, _tip = _repo_with_branch(tmp_path)
    merge, _changed = _half_moved_merge(repo)
    assert repo.git.status("--porcelain") != ""
    assert sync_checkout(repo, "main")
    assert repo.git.status("--porcelain") == "" and repo.head.commit.hexsha == merge


def test_the_users_own_edits_are_never_overwritten_by_the_repair(tmp_path: Path) -> None:
    repo, _old, _tip = _repo_with_branch(tmp_path)
    _half_moved_merge(repo)
    mine = Path(repo.working_dir) / "README.md"
    mine.write_text(mine.read_text() + "\nmy note\n")
    assert not sync_checkout(repo, "main")
    assert mine.read_text().endswith("my note\n")
