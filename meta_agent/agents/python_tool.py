"""`run_python`: small Python an agent writes to analyse the evidence, run only inside a sandbox session.

The agent's code never runs on the trusted side: it runs as `python -c CODE` in a session, under a
wall-clock limit, with its output bounded. The diagnostician's session sees the harness and the
evidence folder read-only (nothing it can write survives the session); the coder's runs in its own
workspace session, where the evidence is mounted read-only.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from meta_agent.llm.agent_loop import truncate
from meta_agent.llm.tools import ToolResult
from sandboxes import Session

MAX_CODE_CHARS = 20_000
PYTHON_SECONDS = 60.0
OUTPUT_CHARS = 8_000
DESCRIPTION = ("Run a short Python program in the sandbox, for analysis: print what you want to see (output is cut "
               f"at {OUTPUT_CHARS:,} characters, the run at {PYTHON_SECONDS:.0f} s). $EVIDENCE is the evidence "
               "folder (rollouts/*.json, rollouts/index.tsv, report.md, candidates/); the working directory is the "
               "harness, so `import harness` works. No network.")


class PythonArgs(BaseModel):
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS,
                      description="Python source, e.g. load $EVIDENCE/rollouts/*.json and count rewards by label")


def run_python(session: Session, code: str, *, cwd: Path, env: Mapping[str, str]) -> ToolResult:
    result = session.run([sys.executable, "-c", code], timeout=PYTHON_SECONDS, env=dict(env), cwd=cwd)
    output = truncate((result.stdout + ("\n" + result.stderr if result.stderr.strip() else "")).strip(),
                      OUTPUT_CHARS)
    if result.timed_out:
        return ToolResult(f"stopped after {PYTHON_SECONDS:.0f} s (make it smaller)\n{output}", ok=False)
    if result.oom_killed:
        return ToolResult(f"ran out of memory\n{output}", ok=False)
    if result.exit_code != 0:
        return ToolResult(f"exit code {result.exit_code}\n{output}", ok=False)
    return ToolResult(output or "(no output: print what you want to see)")
