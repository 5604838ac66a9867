"""The default task set ships with meta-agent: installed in seconds, whole or not at all, unreadable in sandboxes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.swe.checkout import checkout
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import SPLITS
from meta_agent.swe.shipped import SHIPPED_DIR, install_shipped, shipped_manifest
from meta_agent.swe.splits import with_splits
from meta_agent.swe.taskset import (
    DEFAULT_SEED,
    DEFAULT_SHARES,
    default_origin,
    list_tasksets,
    load_tasks,
    tasksets_dir,
)
from sandboxes import Limits, Sandbox

DOCS = Path(__file__).resolve().parents[2] / "docs" / "swe-tasks.md"
SANDBOX = os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache of this test's own (installing the default set here never shows in another test's cache) whose
    sdist downloads are shared with the session's."""
    shared = Path(os.environ["META_AGENT_CACHE"]) / "swe" / "sdists"
    shared.mkdir(parents=True, exist_ok=True)
    (tmp_path / "cache" / "swe").mkdir(parents=True)
    (tmp_path / "cache" / "swe" / "sdists").symlink_to(shared)
    monkeypatch.setenv("META_AGENT_CACHE", str(tmp_path / "cache"))
    yield tmp_path / "cache"


def test_the_shipped_set_is_the_pinned_build(empty_cache: Path, tmp_path: Path) -> None:
    shipped = shipped_manifest()
    assert shipped is not None, f"no shipped default set in {SHIPPED_DIR}"
    assert shipped.origin == default_origin() and shipped.seed == DEFAULT_SEED, "pins changed: rebuild and re-ship"
    assert f"manifest `{shipped.digest}`" in DOCS.read_text(), "docs/swe-tasks.md names another default set"
    installed = install_shipped(sandbox=SANDBOX)  # the repositories too: every commit hash must come out as recorded
    assert installed.digest == shipped.digest and installed.counts == shipped.counts
    instances = [i for split in SPLITS for i in load_tasks(split)]  # each file checked against its hash
    assert len(instances) == sum(shipped.counts.values())
    for inst in instances[::50]:  # a checkout is the buggy tree: the gold patch applies to it
        tree = checkout(inst, tmp_path / inst.instance_id)
        assert (tree / inst.mutation.file).is_file() if inst.mutation else any(tree.iterdir())
        check = subprocess.run(["git", "apply", "--check", "-"], input=inst.patch, text=True, cwd=tree,
                               capture_output=True)
        assert check.returncode == 0, (inst.instance_id, check.stderr)
    # The splits are the ones the pinned assignment gives (what a build from source writes).
    again = with_splits([i.model_copy(update={"split": None}) for i in instances], seed=DEFAULT_SEED,
                        shares=DEFAULT_SHARES)
    assert [i.split for i in again] == [i.split for i in instances]


@pytest.mark.parametrize("damage", ["flipped", "truncated", "missing"])
def test_a_damaged_shipped_set_is_refused_and_leaves_no_set(empty_cache: Path, tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "shipped"
    shutil.copytree(SHIPPED_DIR, folder)
    victim = folder / "test.jsonl.gz"
    data = victim.read_bytes()
    if damage == "flipped":  # a valid gzip of other bytes
        import gzip

        plain = bytearray(gzip.decompress(data))
        plain[len(plain) // 2] ^= 1
        victim.write_bytes(gzip.compress(bytes(plain)))
    elif damage == "truncated":
        victim.write_bytes(data[: len(data) // 2])
    else:
        victim.unlink()
    with pytest.raises(SweTaskError, match="--from-source"):
        install_shipped(folder)
    assert list_tasksets() == []
    assert not list(tasksets_dir().iterdir()), "a half-installed set was left in the cache"


def test_tasks_build_default_installs_the_shipped_set(empty_cache: Path) -> None:
    runner = CliRunner()
    built = runner.invoke(app, ["build", "--default", "--no-progress", "--sandbox", SANDBOX])
    assert built.exit_code == 0, built.output
    shipped = shipped_manifest()
    assert shipped is not None and "installed" in built.output and shipped.digest in built.output
    listed = runner.invoke(app, ["list"])
    assert listed.exit_code == 0 and "default" in listed.output and shipped.digest in listed.output
    refused = runner.invoke(app, ["build", "--from-source", "--from-pypi", "toolz==1.0.0"])
    assert refused.exit_code != 0 and "--default" in refused.output


READ = """
import os, sys
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            print("READ", path, len(f.read()))
    except OSError as e:
        print("DENIED", path, type(e).__name__)
"""


def test_a_sandbox_cannot_read_the_shipped_set(tmp_path: Path, sandbox: Sandbox) -> None:
    files = sorted(str(p) for p in SHIPPED_DIR.iterdir())
    assert len(files) == 4
    work = tmp_path / "work"
    work.mkdir()
    with sandbox.open(work, limits=Limits(memory_mb=1024, timeout_s=120)) as session:
        result = session.run([sys.executable, "-c", READ, *files])
    assert result.exit_code == 0, result.describe_failure()
    assert result.stdout.count("DENIED") == len(files), result.stdout
