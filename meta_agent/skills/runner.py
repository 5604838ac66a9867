"""Runs a skill's apply.py on a harness checkout inside a sandbox session.

apply.py may have been written by an LLM, so it is untrusted like harness code:
it runs in the sandbox with skillkit.py (meta_agent/inside/skillkit.py) beside it and
reports back one JSON line that is validated here.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from meta_agent import inside
from meta_agent.skills.store import Skill
from sandboxes import Session

KIT_FILE = "skillkit.py"
ALREADY_APPLIED = "already applied"
"""The reason RUNNER_SOURCE reports for `skillkit.AlreadyApplied`: the harness already has the change."""
RUNNER_FILE = "run_skill.py"
RUNNER_SOURCE = '''"""Loads one skill's apply.py and applies it to a harness checkout; prints one JSON line."""
import importlib.util
import json
import sys
from pathlib import Path

import skillkit

apply_path, harness_dir, params = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
spec = importlib.util.spec_from_file_location("skill_apply", apply_path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
try:
    summary = module.apply(harness_dir, params)
except skillkit.AlreadyApplied as e:
    print(json.dumps({"ok": False, "reason": f"already applied: {e}"}))
except skillkit.EditError as e:
    print(json.dumps({"ok": False, "reason": f"cannot apply: {e}"}))
else:
    print(json.dumps({"ok": True, "summary": str(summary)}))
'''


class ApplyOutcome(BaseModel):
    ok: bool
    summary: str = ""
    reason: str = ""


def prepare_kit(kit_dir: Path) -> Path:
    """Write skillkit.py and the runner into `kit_dir` (mounted read-only into workspaces)."""
    kit_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(inside.path(KIT_FILE), kit_dir / KIT_FILE)
    (kit_dir / RUNNER_FILE).write_text(RUNNER_SOURCE)
    return kit_dir


def run_apply(session: Session, kit_dir: Path, skill: Skill, harness_dir: Path, params: dict[str, Any],
              timeout: float = 120) -> ApplyOutcome:
    script = skill.apply_script
    if script is None:
        return ApplyOutcome(ok=False, reason=f"skill {skill.name} has no apply.py")
    result = session.run(
        [sys.executable, str(kit_dir / RUNNER_FILE), str(script), str(harness_dir), json.dumps(params)],
        timeout=timeout,
        env={"PYTHONPATH": str(kit_dir)},
    )
    if not result.ok:
        return ApplyOutcome(ok=False, reason=f"apply.py of {skill.name} {result.describe_failure()}")
    lines = result.stdout.strip().splitlines()
    try:
        return ApplyOutcome.model_validate_json(lines[-1] if lines else "")
    except ValidationError:
        return ApplyOutcome(ok=False, reason=f"apply.py of {skill.name} printed no result: {result.stdout[-300:]}")
