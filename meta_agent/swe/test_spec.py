"""SWE-bench's test spec for an instance that runs in its own image: the eval script and the parser of its log.

SWE-bench 5 rows carry their spec (`eval_script`, `log_parser`, `eval_type`); SWE-Gym and SWE-smith rows, and
instances given an image here, do not, so one is written the way SWE-bench writes its pytest specs: go to
/testbed, reset the judging test files to the base commit, apply `test_patch`, run pytest with `-rA` between
SWE-bench's start and end markers, reset the test files again. Its log is read by swebench's own
`parse_log_pytest`. Grading (`swebench.harness.grading.get_eval_report`) is swebench's, whichever spec is used.
"""

from __future__ import annotations

import re
import secrets
import shlex
from typing import Any

from meta_agent.swe.instance import SweInstance

IMAGE_WORKDIR = "/testbed"
"""Where every SWE-bench-family image keeps the repository (SWE-bench, SWE-Gym, SWE-smith, R2E-Gym)."""
CONDA_ACTIVATE = "/opt/miniconda3/bin/activate"
"""SWE-bench's images put the project's environment in a conda env named `testbed`; others have none."""
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


def patch_files(patch: str) -> list[str]:
    """The paths a unified diff touches (both sides of a rename), in order, once each."""
    seen: dict[str, None] = {}
    for a, b in _DIFF_FILE.findall(patch):
        seen.setdefault(a, None)
        seen.setdefault(b, None)
    return list(seen)


def _test_files(instance: SweInstance) -> list[str]:
    return list(dict.fromkeys(test_id.split("::", 1)[0] for test_id in [*instance.FAIL_TO_PASS,
                                                                         *instance.PASS_TO_PASS]))


def _heredoc(text: str) -> str:
    delimiter = f"EOF_{secrets.token_hex(6)}"
    while delimiter in text:
        delimiter = f"EOF_{secrets.token_hex(6)}"
    body = text if text.endswith("\n") else text + "\n"
    return f"git apply -v - <<'{delimiter}'\n{body}{delimiter}"


def pytest_eval_script(instance: SweInstance) -> str:
    """An eval script in SWE-bench's shape for a pytest project (see the module docstring)."""
    base = shlex.quote(instance.base_commit)
    touched = " ".join(shlex.quote(f) for f in patch_files(instance.test_patch))
    args = " ".join(shlex.quote(a) for a in instance.test_setup().pytest_args) if instance.setup else ""
    files = " ".join(shlex.quote(f) for f in _test_files(instance))
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        f"cd {IMAGE_WORKDIR}",
        f"if [ -f {CONDA_ACTIVATE} ]; then source {CONDA_ACTIVATE}; conda activate testbed; fi",
    ]
    if touched:
        lines.append(f"git checkout {base} -- {touched}")
        lines.append(_heredoc(instance.test_patch))
    lines += [f": '{START}'", f"python -m pytest -rA {args} {files}".replace("  ", " ").rstrip(), f": '{END}'"]
    if touched:
        lines.append(f"git checkout {base} -- {touched}")
    return "\n".join(lines) + "\n"


def spec_fields(instance: SweInstance) -> dict[str, Any]:
    """image, eval_script, log_parser and eval_type as SWE-bench 5 rows hold them (an instance's own, or written)."""
    if instance.image is None:
        raise ValueError(f"{instance.instance_id} has no image: it runs in meta-agent's own sandbox")
    if instance.eval_script is not None:
        return {"image": instance.image, "eval_script": instance.eval_script, "log_parser": instance.log_parser,
                "eval_type": instance.eval_type or "pass_and_fail"}
    return {"image": instance.image, "eval_script": pytest_eval_script(instance), "log_parser": "parse_log_pytest",
            "eval_type": instance.eval_type or "pass_and_fail"}


def swebench_row(instance: SweInstance) -> dict[str, Any]:
    """The instance as a SWE-bench 5 row: what `swebench.harness.utils.make_test_spec` reads."""
    return {**instance.model_dump(mode="json", exclude={"mutation"}), **spec_fields(instance),
            "version": instance.version or "0"}


def swebench_test_spec(instance: SweInstance) -> Any:
    """swebench's TestSpec for the instance (swebench is imported only here: it takes ~3 s)."""
    from swebench.harness.utils import make_test_spec

    return make_test_spec(swebench_row(instance))
