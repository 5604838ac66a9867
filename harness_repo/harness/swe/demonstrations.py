"""Demonstrations for a warm start (harness/warm_start.py): train tasks' fixes, acted out as episodes.

meta-agent exports each train task's fix as `metadata.demonstration` (where the bug is, the edit
commands). This turns it into the conversation a competent policy would have under this harness's own
agent settings, exploring first the way it must on a sealed task, where nothing says where the bug is:

  1. find the function the failing test names (`grep -rn 'def name(' .`),
  2. read it with line numbers from the `def` line the search printed (`cat -n file | sed -n 'N,+11p'`),
     and where the capped observation ends before the bug's line (a long docstring), read on from the last
     line it showed: every number a demonstration writes is one it was shown, as on a sealed task, where
     nothing says where the bug is,
  3. the edit(s), naming the line number the listing showed,
  4. `submit`.

Every command runs in the task's checkout here (the observations are real), and a demonstration is kept
only if its edits change the checkout and every reply fits in a turn. Tasks that run in their own images
(no archive here) are skipped.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.config import HarnessConfig
from harness.swe import agent, remote, repo
from harness.swe.prompts import build_messages
from harness.swe.settings import AgentSettings, agent_settings

VIEW_LINES = 12
"""Lines of the function a demonstration reads (the cap on observations cuts long listings anyway)."""


def demonstrations(cfg: HarnessConfig, tasks: list[dict[str, Any]], fits: Callable[[str], bool],
                   limit: int) -> list[list[dict[str, str]]]:
    """Up to `limit` demonstration conversations, from the easiest tasks first."""
    s = agent_settings(cfg)
    ordered = sorted(tasks, key=lambda t: (t.get("difficulty", 0), t["id"]))
    out: list[list[dict[str, str]]] = []
    scratch = Path(tempfile.mkdtemp(prefix="demos-"))
    try:
        for i, task in enumerate(ordered):
            if len(out) >= limit:
                break
            demo = (task.get("metadata") or {}).get("demonstration")
            if not isinstance(demo, dict) or remote.in_image(task):
                continue
            conv = act_out(task, demo, repo.checkout(task, Path(task["tasks_dir"]), scratch / f"d{i}"), s, fits)
            shutil.rmtree(scratch / f"d{i}", ignore_errors=True)
            if conv is not None:
                out.append(conv)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def _reply(command: str) -> str:
    return f"```bash\n{command}\n```"


def _def_line(found: str, file: str, bug_line: int) -> int | None:
    """The `def` in `file` that the search printed (`./path:N:...`) and that holds the bug: the last one above it."""
    lines = []
    for line in found.splitlines():
        m = re.match(r"^(?:\./)?(.+?):(\d+):", line)
        if m and m.group(1) == file and int(m.group(2)) <= bug_line:
            lines.append(int(m.group(2)))
    return max(lines, default=None)


def shown_lines(output: str) -> list[int]:
    """The line numbers of a `cat -n` listing that the (capped) output shows whole: a line the cap cut is not
    shown, so a policy reads on from the last whole one."""
    body, marker, _ = output.rpartition(agent.CUT_MARK)
    lines = body.split("\n")[:-1] if marker else output.split("\n")  # the cap cut the body's last line
    return [int(m.group(1)) for line in lines if (m := re.match(r"^\s*(\d+)\t", line))]


def act_out(task: dict[str, Any], demo: dict[str, Any], workdir: Path, s: AgentSettings,
            fits: Callable[[str], bool]) -> list[dict[str, str]] | None:
    """The demonstration as a conversation (None: it does not fit this harness's turns, edits nothing, or could
    not find the bug's line from what it was shown)."""
    messages = build_messages(task)
    file, bug_line = str(demo.get("file") or ""), int(demo.get("line") or 0)
    edits = [e for e in demo.get("edits") or [] if isinstance(e, str)]
    if not file or bug_line <= 0 or not edits or not isinstance(demo.get("find"), str):
        return None

    def turn(command: str) -> str:
        code, output = agent.run_command(command, workdir, s.command_timeout_s, s.observation_chars)
        obs = agent.observation(code, output)
        messages.extend([{"role": "assistant", "content": _reply(command)}, {"role": "user", "content": obs}])
        return output

    start = _def_line(turn(demo["find"]), file, bug_line)
    if start is None:
        return None  # the search did not show where to read: nothing a policy could follow
    while True:  # read from the `def`, then on from the last line shown, until the bug's line is shown whole
        shown = shown_lines(turn(f"cat -n {shlex.quote(file)} | sed -n '{start},+{VIEW_LINES - 1}p'"))
        if bug_line in shown:
            break
        replies = sum(m["role"] == "assistant" for m in messages)
        if not shown or max(shown) <= start or replies + len(edits) + 1 >= s.max_turns:
            return None  # no further to read, or no turn left to read on, edit and submit
        start = max(shown)
    for command in edits:
        turn(command)
    messages.append({"role": "assistant", "content": _reply(agent.SUBMIT)})
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    if len(replies) > s.max_turns or not all(fits(r) for r in replies) or not repo.diff(workdir).strip():
        return None
    return messages
