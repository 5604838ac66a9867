"""One policy turn's mechanics: find the command in the reply, run it in the episode's checkout."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
from pathlib import Path

SUBMIT = "submit"
FENCE = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)```", re.DOTALL)
NO_COMMAND = "No command found. Reply with exactly one shell command in a ```bash block, or ```bash\nsubmit\n```."


def parse_command(reply: str) -> str | None:
    """The command in the reply's first fenced block (None: no well-formed block)."""
    match = FENCE.search(reply)
    if match is None:
        return None
    command = match.group(1).strip()
    return command or None


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (30, 30))
    resource.setrlimit(resource.RLIMIT_FSIZE, (50 * 2**20, 50 * 2**20))


CUT_MARK = "\n[... "
"""What follows output the cap cut (then how many characters were cut)."""


def run_command(command: str, cwd: Path, timeout: float, max_chars: int) -> tuple[int, str]:
    """(exit code, output shown to the policy). The policy's command runs inside the harness's own
    sandbox, in its own process group, killed whole on timeout."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(cwd)}
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_limits)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = -9
        out += f"\n[command timed out after {timeout:.0f}s]".encode()
    text = out.decode("utf-8", errors="replace")
    if len(text) > max_chars:
        text = text[:max_chars] + f"{CUT_MARK}{len(text) - max_chars} characters cut ...]"
    return code, text


def observation(code: int, output: str) -> str:
    return f"exit code {code}\n{output}" if output.strip() else f"exit code {code} (no output)"
