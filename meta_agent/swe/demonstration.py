"""A train instance's fix as a demonstration the harness may learn from (a warm start before RL).

The train split is the harness's data (selection and test stay sealed), so its fixes may cross: each
train task's metadata carries `demonstration`, which says where the bug is and how an engineer would
edit it, one shell command per edit. The harness decides what to do with it (the `warm_start` settings
of harness.yaml; off in the template): it acts the demonstration out in its own sandbox, exploring first
as a policy must (find the function the failing test names, read it with line numbers), then the edits.

Nothing here runs a command: these are strings for the harness's sandbox. Every path or name from the
task file is quoted for the shell. A one-line fix is a `sed` substitution on the numbered line where one is
safe (meta_agent/swe/sed_edit.py: ~25 tokens a small policy can learn to write, where rewriting the line
took 80-96); otherwise edited lines travel as Python literals inside a quoted heredoc.
"""

from __future__ import annotations

import shlex
from typing import Any

from meta_agent.swe.competent import fix_commands, patch_edits
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.sed_edit import sed_command

EDIT_CHARS = 360
"""Longest edit command sent as one reply (about 128 tokens of code); longer edits are sent in parts."""


def _line_edit(path: str, line: int, new: str) -> str:
    """Replace the 1-based line `line` by `new`: the line number is the one the numbered view showed."""
    body = [f"p = {path!r}", "L = open(p).read().split('\\n')", f"L[{line} - 1] = {new!r}",
            "open(p, 'w').write('\\n'.join(L))"]
    return "python3 - <<'EOF'\n" + "\n".join(body) + "\nEOF"


def edit_commands(instance: SweInstance, sed: bool = True) -> list[str]:
    """The gold fix as edit commands: a one-line change names its 1-based line (a `sed` substitution where one
    is safe and `sed` is on, else the line rewritten); anything else is the scripted competent agent's edits
    (meta_agent/swe/competent.py), in parts of at most EDIT_CHARS characters."""
    edits = patch_edits(instance.patch)
    if len(edits) == 1 and len(edits[0].removed) == 1 and len(edits[0].added) == 1:
        e = edits[0]
        command = sed_command(e.path, e.start + 1, e.removed[0], e.added[0]) if sed else None
        return [command or _line_edit(e.path, e.start + 1, e.added[0])]
    commands = fix_commands(instance, lambda c: len(c) <= EDIT_CHARS)
    return [c for c in commands[1:] if c not in ("git diff", "submit")]


def demonstration(instance: SweInstance) -> dict[str, Any] | None:
    """What a train task exports for a warm start (None: the patch holds no edit)."""
    edits = patch_edits(instance.patch)
    if not edits:
        return None
    mutation = instance.mutation
    file = mutation.file if mutation else edits[0].path
    line = mutation.line if mutation else edits[0].start + 1
    function = mutation.function if mutation else None
    name = function.rsplit(".", 1)[-1] if function else None  # a method is found by its own name
    return {
        "function": function,
        "file": file,
        "line": line,
        "find": f"grep -rn --include='*.py' {shlex.quote(f'def {name}(')} ." if name else None,
        "edits": edit_commands(instance),
    }
