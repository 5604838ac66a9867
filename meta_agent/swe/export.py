"""Files for SWE-bench tooling: a task set's instances, and a predictions file from an evaluation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from meta_agent.fsutil import atomic_write_lines
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.instance import Split, write_instances
from meta_agent.swe.taskset import load_tasks


def export_taskset(name: str, out: Path, *, splits: Sequence[Split], with_private: bool) -> int:
    """Write the instances of `splits` of task set `name` as SWE-bench JSONL; returns how many.

    An instance with its own image is written with its whole SWE-bench 5 test spec (`image`, `eval_script`,
    `log_parser`, `eval_type`: its own, or the pytest one meta-agent grades it by), so swebench's harness
    (`make_test_spec`, `run_instance`) can evaluate predictions for it as it is."""
    from meta_agent.swe.test_spec import spec_fields

    instances = [inst.model_copy(update=spec_fields(inst)) if inst.image else inst
                 for split in splits for inst in load_tasks(split, name)]
    return write_instances(out, instances, with_private=with_private)


def write_predictions(eval_file: Path, out: Path, *, model_name: str | None = None) -> int:
    """SWE-bench predictions (instance_id, model_name_or_path, model_patch) from `meta-agent eval --out` JSON."""
    from meta_agent.domains.base import EvalResult

    if not eval_file.is_file():
        raise SweTaskError(f"{eval_file}: no such file; write one with `meta-agent eval --domain swe --out FILE`")
    try:
        result = EvalResult.model_validate_json(eval_file.read_text(encoding="utf-8"))
    except ValidationError as e:
        raise SweTaskError(f"{eval_file}: not an evaluation written by `meta-agent eval --out` "
                           f"({e.errors()[0]['msg']})") from e
    if result.domain != "swe":
        raise SweTaskError(f"{eval_file}: a {result.domain} evaluation; predictions are made from SWE evaluations")
    raw = json.loads(eval_file.read_text(encoding="utf-8"))
    if result.results and not any("answer" in r for r in raw.get("results", [])):
        raise SweTaskError(f"{eval_file} holds no diffs (written by an older meta-agent); run "
                           "`meta-agent eval --domain swe --out FILE` again")
    model = model_name or result.policy
    rows = [json.dumps({"instance_id": r.task_id, "model_name_or_path": model, "model_patch": r.answer})
            for r in result.results]
    return atomic_write_lines(out, rows)
