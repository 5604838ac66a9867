"""A scripted competent agent: proof that the sealed SWE protocol can be passed.

The sealed evaluator gives a policy a fixed number of turns of a fixed number of tokens
(`ScaffoldSettings`). If an agent that already knows the fix cannot fit it into that budget, no
policy can score, every GRPO group is all zeros, and nothing the search does can show up. This agent
knows the gold patch (it runs on the trusted side only, like the evaluator) and acts it out the way a
competent engineer would, one shell command per turn:

  1. look at the code around the first changed line (`sed -n`),
  2. edit each changed file (a short Python heredoc that replaces the changed lines),
  3. look at the result (`git diff`),
  4. `submit`.

Each reply is cut at the turn's token budget exactly as generation would cut it (with the policy's
tokenizer), so an edit that does not fit fails the episode. `tokens_needed` records the longest reply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from meta_agent.swe.instance import SweInstance

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_TASK_ID = re.compile(r"^Task id: (\S+)", re.MULTILINE)


@dataclass
class Edit:
    path: str
    start: int
    """0-based index of the first old line replaced."""
    removed: list[str]
    added: list[str]


def patch_edits(patch: str) -> list[Edit]:
    """The runs of removed/added lines of a unified diff, with where they start in the old file. A hunk's
    lines are counted from its header, so a changed line that itself starts with `--- ` is not a header."""
    edits: list[Edit] = []
    path = ""
    old_line = old_left = new_left = 0
    run: Edit | None = None
    for line in patch.splitlines():
        if old_left <= 0 and new_left <= 0:  # between hunks: file headers and hunk headers
            run = None
            if line.startswith("+++ "):
                path = line[4:].split("\t")[0].removeprefix("b/")
            elif m := _HUNK.match(line):
                old_line = int(m.group(1)) - 1
                old_left, new_left = int(m.group(2) or 1), int(m.group(3) or 1)
            continue
        kind, text = line[:1], line[1:]
        if kind == "\\":  # "\ No newline at end of file"
            continue
        if kind in "-+" and kind:
            if run is None:
                run = Edit(path, old_line, [], [])
                edits.append(run)
            (run.removed if kind == "-" else run.added).append(text)
            old_line += kind == "-"
            old_left -= kind == "-"
            new_left -= kind == "+"
        else:  # context
            run = None
            old_line += 1
            old_left -= 1
            new_left -= 1
    return edits


def fix_commands(instance: SweInstance, fits: Callable[[str], bool] | None = None) -> list[str]:
    """The gold fix as the shell commands of a competent engineer (see the module docstring). With `fits`
    (does a command fit in one reply?), a file's edit that does not fit is sent in parts, each edit bottom
    up and its added lines in the largest runs that fit, as an engineer with short replies would."""
    edits = patch_edits(instance.patch)
    if not edits:
        return ["submit"]
    first = edits[0]
    commands = [f"sed -n '{max(1, first.start - 2)},{first.start + len(first.removed) + 3}p' {first.path}"]
    for path in dict.fromkeys(e.path for e in edits):
        bottom_up = sorted((e for e in edits if e.path == path), key=lambda e: -e.start)  # indices hold
        whole = _edit_command(path, [(e.start, len(e.removed), e.added) for e in bottom_up])
        if fits is None or fits(whole):
            commands.append(whole)
        else:
            for e in bottom_up:
                commands += _edit_in_parts(path, e, fits)
    return [*commands, "git diff", "submit"]


def _edit_command(path: str, replacements: list[tuple[int, int, list[str]]]) -> str:
    """A Python heredoc that replaces, for each (start, count, lines), `count` lines from `start` by `lines`."""
    body = [f"p = {path!r}", "L = open(p).read().split('\\n')"]
    body += [f"L[{start}:{start + count}] = {lines!r}" for start, count, lines in replacements]
    body.append("open(p, 'w').write('\\n'.join(L))")
    return "python3 - <<'EOF'\n" + "\n".join(body) + "\nEOF"


def _edit_in_parts(path: str, e: Edit, fits: Callable[[str], bool]) -> list[str]:
    """One edit as several commands: the first replaces the removed lines by the first run of added lines,
    each later one inserts the next run after it. A single line that does not fit is sent anyway (and cut)."""
    parts: list[str] = []
    done = 0
    while True:
        take = len(e.added) - done
        while True:
            command = _edit_command(path, [(e.start + done, len(e.removed) if done == 0 else 0,
                                            e.added[done:done + take])])
            if take <= 1 or fits(command):
                break
            take -= 1
        parts.append(command)
        done += take
        if done >= len(e.added):
            return parts


@dataclass
class CompetentAgent:
    """A `Replier` for `SweDomain.score`: the next command of each episode's fix, cut at the token budget."""

    instances: Sequence[SweInstance]
    tokenizer: Any
    tokens_needed: int = 0
    """The longest reply it sent or tried to send, in tokens (an edit split into parts counts its parts)."""
    turns_needed: int = 0
    """The most commands one fix took (what `max_turns` must allow)."""
    cut: list[str] = field(default_factory=list)
    """Instances where a reply was cut at the budget."""
    _plans: dict[tuple[str, int], list[str]] = field(default_factory=dict, repr=False)
    """Each episode's commands, planned at its first turn (fitting them tokenizes every part tried)."""

    def _tokens(self, command: str) -> int:
        return len(self.tokenizer(_reply(command), add_special_tokens=False)["input_ids"])

    def __call__(self, conversations: Sequence[list[dict[str, str]]], max_new: int) -> list[str]:
        by_id = {i.instance_id: i for i in self.instances}
        out = []
        for conv in conversations:
            found = _TASK_ID.search(conv[1]["content"]) if len(conv) > 1 else None
            inst = by_id.get(found.group(1)) if found else None
            if inst is None:
                commands = ["submit"]
            elif (key := (inst.instance_id, max_new)) not in self._plans:
                commands = self._plans[key] = fix_commands(inst, lambda c: self._tokens(c) <= max_new)
            else:
                commands = self._plans[key]
            self.turns_needed = max(self.turns_needed, len(commands))
            turn = sum(1 for m in conv if m["role"] == "assistant")
            text = _reply(commands[min(turn, len(commands) - 1)])
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            self.tokens_needed = max(self.tokens_needed, len(ids))
            if len(ids) > max_new:
                self.cut.append(inst.instance_id if inst else "?")
                text = self.tokenizer.decode(ids[:max_new], skip_special_tokens=True)
            out.append(text)
        return out


def _reply(command: str) -> str:
    return f"```bash\n{command}\n```"
