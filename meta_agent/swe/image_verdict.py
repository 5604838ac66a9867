"""The sealed evaluator for an instance that runs in its own image: SWE-bench's protocol, meta-agent's isolation.

As `swebench.harness.run_evaluation.run_instance` does: the diff is applied in /testbed, the instance's eval
script runs the tests between SWE-bench's markers, and swebench's `get_eval_report` grades the log with the
instance's log parser. What differs is where it runs: a container of the instance's image with no network, a
read-only root, the unprivileged sandbox uid and the evaluation's limits (swebench's own runs as root with
CAP_SYS_ADMIN on the engine's bridge network), on a copy of the repository whose history stops at the base
(`meta_agent/swe/image_tree.py`). Two rules are meta-agent's own, as in the built-instance evaluator: the
diff's changes to test files are dropped before it is applied, and a changed Python file that no longer
parses fails the diff.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from pathlib import Path

from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.image_tree import image_env, instance_tree
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.layout import is_test_path
from meta_agent.swe.task_images import require_image
from meta_agent.swe.test_spec import patch_files, swebench_test_spec
from meta_agent.swe.verdict import PatchVerdict, syntax_errors
from sandboxes import Limits, Mount, SandboxError
from sandboxes.docker import DockerSandbox

IMAGE_EVAL_LIMITS = Limits(memory_mb=4096, cpus=1.0, pids=512, output_bytes=50_000_000)
IMAGE_TEST_TIMEOUT_S = 1800.0
"""swebench's default; an instance's own `setup.timeout_s` wins."""
APPLY = (["git", "apply", "--verbose"], ["git", "apply", "--verbose", "--recount"],
         ["git", "apply", "--verbose", "--recount", "--unidiff-zero"])
_FILE_START = re.compile(r"^diff --git ", re.MULTILINE)
HARBOR_TESTS, HARBOR_LOGS = "/tests", "/logs/verifier"
"""Where Harbor's verifier finds its tests and writes reward.txt or reward.json."""
MAX_REWARD_BYTES = 10_000


def split_test_changes(diff_text: str) -> tuple[str, list[str]]:
    """The diff without its parts that change test files, and those files (they are never the fix)."""
    starts = [m.start() for m in _FILE_START.finditer(diff_text)]
    if not starts:
        return diff_text, []
    kept, dropped = [diff_text[: starts[0]]], []
    for begin, end in zip(starts, [*starts[1:], len(diff_text)], strict=True):
        part = diff_text[begin:end]
        files = patch_files(part.splitlines()[0] + "\n")
        if any(is_test_path(f) for f in files):
            dropped += files
        else:
            kept.append(part)
    return "".join(kept), sorted(set(dropped))


def evaluate_in_image(instance: SweInstance, diff_text: str) -> PatchVerdict:
    """Grade `diff_text` on an image instance; SweTaskError when its image or engine is missing."""
    from sandboxes.engine import docker_client

    start = time.monotonic()
    verdict = PatchVerdict(instance_id=instance.instance_id, resolved=False, diff_applies=True, syntax_error=False,
                           tests_touched=False, fail_to_pass_total=len(instance.FAIL_TO_PASS),
                           pass_to_pass_total=len(instance.PASS_TO_PASS))
    try:
        client = docker_client()
    except SandboxError as err:
        raise SweTaskError(f"instance {instance.instance_id} runs in its own image, which needs a Docker engine: "
                           f"{err}") from err
    tmp = Path(tempfile.mkdtemp(prefix="meta-agent-swe-image-eval-")).resolve()
    try:
        image = require_image(client, instance)
        tree, workdir = instance_tree(client, instance, image)
        work, io_dir, logs = tmp / "work", tmp / "io", tmp / "logs"
        shutil.copytree(tree, work, symlinks=True)
        io_dir.mkdir()
        logs.mkdir()
        # A Harbor verifier's tests live in /tests, out of the policy's reach; its working directory's own test
        # files may be what a task asks for
        kept, touched = (diff_text, []) if instance.harbor else split_test_changes(diff_text)
        verdict.tests_touched = bool(touched)
        verdict.changed_files = sorted({*patch_files(diff_text)})
        spec = None if instance.harbor else swebench_test_spec(instance)
        (io_dir / "patch.diff").write_text(kept if kept.endswith("\n") else kept + "\n", encoding="utf-8")
        mounts = [Mount(io_dir)]
        if spec is not None:
            (io_dir / "eval.sh").write_text(spec.eval_script, encoding="utf-8")
        else:
            assert instance.harbor is not None
            from meta_agent.swe.harbor import task_files

            mounts += [Mount(task_files(instance.harbor) / "tests", target=Path(HARBOR_TESTS)),
                       Mount(logs, read_only=False, target=Path(HARBOR_LOGS))]
        sandbox = DockerSandbox(image=image, workdir_at=Path(workdir), env=image_env(client, image))
        with sandbox.open(work, mounts=mounts, limits=IMAGE_EVAL_LIMITS) as session:
            if kept.strip():
                error = ""
                for cmd in APPLY:
                    done = session.run([*cmd, str(io_dir / "patch.diff")], timeout=120)
                    if done.ok:
                        break
                    error = (done.stderr or done.stdout).strip()[-2000:]
                else:
                    verdict.diff_applies = False
                    verdict.detail = f"the diff does not apply: {error}"
                    return verdict
            bad = syntax_errors(work, patch_files(kept))
            if bad:
                verdict.syntax_error = True
                verdict.detail = "syntax error after the diff: " + "; ".join(bad)[:2000]
                return verdict
            if instance.harbor is not None:
                script = f"/{instance.harbor.test_script}"
                run = session.run(["bash", "-c", f"bash {script} 2>&1"], timeout=instance.harbor.verifier_timeout_s)
                return _rewarded(verdict, instance, logs, run.stdout, run.timed_out, run.oom_killed)
            timeout = instance.setup.timeout_s if instance.setup else IMAGE_TEST_TIMEOUT_S
            run = session.run(["bash", "-c", f"bash {io_dir / 'eval.sh'} 2>&1"], timeout=timeout)
        return _graded(verdict, instance, spec, kept, run.stdout, io_dir, run.timed_out, run.oom_killed)
    finally:
        verdict.wall_time = time.monotonic() - start
        client.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _graded(verdict: PatchVerdict, instance: SweInstance, spec: object, patch: str, log: str, io_dir: Path,
            timed_out: bool, oom: bool) -> PatchVerdict:
    from swebench.harness.grading import get_eval_report

    log_path = io_dir / "test_output.txt"
    log_path.write_text(log, encoding="utf-8")
    report = get_eval_report(test_spec=spec, prediction={"instance_id": instance.instance_id,
                                                         "model_name_or_path": "meta-agent", "model_patch": patch},
                             test_log_path=str(log_path), include_tests_status=True)[instance.instance_id]
    status = report.get("tests_status") or {}
    for key, outcome in (("success", "passed"), ("failure", "failed")):
        for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            for test in status.get(group, {}).get(key, []):
                verdict.tests[test] = outcome
    verdict.fail_to_pass_passed = len(status.get("FAIL_TO_PASS", {}).get("success", []))
    verdict.pass_to_pass_passed = len(status.get("PASS_TO_PASS", {}).get("success", []))
    verdict.resolved = bool(report.get("resolved")) and not timed_out and not oom
    if timed_out:
        verdict.detail = "the test run timed out"
    elif oom:
        verdict.detail = "the test run ran out of memory"
    elif not report.get("patch_successfully_applied"):
        verdict.detail = "swebench found no test results in the log: " + log.strip()[-1000:]
    return verdict


def harbor_reward(logs: Path) -> float | None:
    """The reward a Harbor verifier wrote (reward.txt: one number; reward.json: {"reward": x} or named rewards,
    of which the smallest counts); None when it wrote none or nothing a number can be read from."""
    import math

    text_file, json_file = logs / "reward.txt", logs / "reward.json"
    try:
        if text_file.is_file() and not text_file.is_symlink():
            value = float(text_file.read_bytes()[:MAX_REWARD_BYTES].decode(errors="replace").strip())
        elif json_file.is_file() and not json_file.is_symlink():
            data = json.loads(json_file.read_bytes()[:MAX_REWARD_BYTES])
            values = [data["reward"]] if isinstance(data, dict) and "reward" in data else (
                list(data.values()) if isinstance(data, dict) else [data])
            if not values or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                return None
            value = float(min(values))
        else:
            return None
    except (ValueError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return value if math.isfinite(value) else None


def _rewarded(verdict: PatchVerdict, instance: SweInstance, logs: Path, output: str, timed_out: bool,
              oom: bool) -> PatchVerdict:
    """A Harbor verifier's run as a verdict: its script is the one FAIL_TO_PASS pseudo-test, passed at reward 1."""
    reward = None if timed_out or oom else harbor_reward(logs)
    passed = reward is not None and reward >= 1.0
    test = instance.FAIL_TO_PASS[0]
    verdict.tests = {test: "passed" if passed else "failed"}
    verdict.fail_to_pass_passed = int(passed)
    verdict.resolved = passed
    if timed_out:
        verdict.detail = "the verifier timed out"
    elif oom:
        verdict.detail = "the verifier ran out of memory"
    elif reward is None:
        verdict.detail = "the verifier wrote no reward (reward.txt or reward.json): " + output.strip()[-1000:]
    else:
        verdict.detail = f"reward {reward:g}"
    return verdict
