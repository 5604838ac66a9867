"""`run_python`: small Python an agent writes to analyse the evidence, run only inside a sandbox session.

The agent's code never runs on the trusted side: it runs as `python -c CODE` in a session, under a
wall-clock limit, with its output bounded. The diagnostician's session (`throwaway_session`) sees the
harness and the evidence folder read-only and writes only a throwaway folder, deleted with the session
and held to a small disk quota; the coder's runs in its own workspace session, where the evidence is
mounted read-only.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

from meta_agent.llm.agent_loop import truncate
from meta_agent.llm.tools import ToolResult
from sandboxes import Limits, Mount, Sandbox, Session

MAX_CODE_CHARS = 20_000
PYTHON_SECONDS = 60.0
PYTHON_DISK_MB = 64
"""What analysis code may write in its throwaway session (folder and scratch together): it prints what it
finds, and nothing it writes outlives the session."""
OUTPUT_CHARS = 8_000
DESCRIPTION = ("Run a short Python program in the sandbox, for analysis: print what you want to see (output is cut "
               f"at {OUTPUT_CHARS:,} characters, the run at {PYTHON_SECONDS:.0f} s). $EVIDENCE is the evidence "
               "folder (rollouts/*.json, rollouts/index.tsv, report.md, candidates/); the working directory is the "
               "harness, so `import harness` works. No network.")


class PythonArgs(BaseModel):
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS,
                      description="Python source, e.g. load $EVIDENCE/rollouts/*.json and count rewards by label")


@contextmanager
def throwaway_session(sandbox: Sandbox, mounts: Sequence[Mount], memory_mb: int) -> Iterator[Session]:
    """A session whose only writable host folder is a fresh temporary one, removed afterwards, within
    `PYTHON_DISK_MB`: analysis code cannot fill the host's disk."""
    with tempfile.TemporaryDirectory(prefix="ma-diagnose-") as folder:
        Path(folder).chmod(0o777)  # sandboxed code runs as an unprivileged uid
        limits = Limits(memory_mb=memory_mb, timeout_s=PYTHON_SECONDS, disk_mb=PYTHON_DISK_MB)
        with sandbox.open(Path(folder), mounts=mounts, limits=limits) as session:
            yield session


def run_python(session: Session, code: str, *, cwd: Path, env: Mapping[str, str]) -> ToolResult:
    result = session.run([sys.executable, "-c", code], timeout=PYTHON_SECONDS, env=dict(env), cwd=cwd)
    output = truncate((result.stdout + ("\n" + result.stderr if result.stderr.strip() else "")).strip(),
                      OUTPUT_CHARS)
    if result.disk_quota_exceeded:
        return ToolResult(f"refused: it wrote more than the sandbox allows ({result.disk_quota_detail}); print "
                          f"what you need to see instead of writing files\n{output}", ok=False)
    if result.timed_out:
        return ToolResult(f"stopped after {PYTHON_SECONDS:.0f} s (make it smaller)\n{output}", ok=False)
    if result.oom_killed:
        return ToolResult(f"ran out of memory\n{output}", ok=False)
    if result.exit_code != 0:
        return ToolResult(f"exit code {result.exit_code}\n{output}", ok=False)
    return ToolResult(output or "(no output: print what you want to see)")
