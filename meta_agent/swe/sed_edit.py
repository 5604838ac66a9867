"""A one-line change as the shortest edit a small policy could learn to write: `sed -i 'Ns/OLD/NEW/' file`.

A warm start teaches by example, and the example's length is what a policy must reproduce token for token
under a turn's budget. Rewriting the whole line in a `python3` here-document takes 80-96 tokens and makes
the policy copy the line, indentation included; a substitution on the numbered line names only what
changes: `sed -i '328s/not re/re/' inflection/__init__.py`, about 25 tokens.

OLD is the changed part of the line grown to whole tokens (a run of word characters or of operator
characters), then grown further, a token at a time, until its first occurrence on the line is the changed
one (sed substitutes the first). Both sides are escaped for GNU sed's basic regular expressions. Where
that cannot be done safely (a quote, which the shell's single quotes cannot hold; a line that is not one
line) there is no such command and the caller keeps its general edit. `applies` replays the command on
the line in Python, so a command is only ever returned when it makes exactly the new line.
"""

from __future__ import annotations

import re
import shlex

_TOKEN = re.compile(r"\w+|[^\w\s]+|\s+")
_BRE_SPECIAL = r"\.*[]^$"
_REPLACEMENT_SPECIAL = "\\&"


def _escape(text: str, special: str) -> str:
    return "".join("\\" + c if c in special else c for c in text)


def _spans(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN.finditer(line)]


def _changed(old: str, new: str) -> tuple[int, int, int]:
    """(start, end in old, end in new) of the part that differs, after the common prefix and suffix."""
    p = 0
    while p < min(len(old), len(new)) and old[p] == new[p]:
        p += 1
    s = 0
    while s < min(len(old), len(new)) - p and old[-1 - s] == new[-1 - s]:
        s += 1
    return p, len(old) - s, len(new) - s


def substitution(old: str, new: str) -> tuple[str, str] | None:
    """(OLD, NEW) literal strings such that replacing the first OLD in `old` by NEW gives `new`."""
    if old == new or "\n" in old + new:
        return None
    start, end, new_end = _changed(old, new)
    spans = _spans(old)
    # grow to whole tokens: those the change overlaps; an insertion, those on either side of it (not spaces)
    if start < end:
        touched = [i for i, (a, b) in enumerate(spans) if a < end and b > start]
    else:
        touched = [i for i, (a, b) in enumerate(spans) if a <= start <= b]
        touched = [i for i in touched if old[slice(*spans[i])].strip()] or touched
    if not touched:
        return None
    lo, hi = min(touched), max(touched)
    for _ in range(len(spans)):
        a, b = spans[lo][0], spans[hi][1]
        piece = old[a:b]
        if piece.strip() and old.find(piece) == a:
            put = new[a:new_end + (b - end)]
            return None if "'" in piece + put else (piece, put)
        if hi + 1 < len(spans):
            hi += 1
        elif lo > 0:
            lo -= 1
        else:
            return None
    return None


def sed_command(path: str, line: int, old: str, new: str) -> str | None:
    """`sed -i 'LINEs/OLD/NEW/' path` that turns `old` (the file's 1-based line `line`) into `new`; None where
    no safe substitution exists."""
    sub = substitution(old, new)
    if sub is None:
        return None
    d = next((c for c in "/|#" if c not in sub[0] + sub[1]), None)  # the delimiter: one neither side holds
    if d is None:
        return None
    find, put = _escape(sub[0], _BRE_SPECIAL), _escape(sub[1], _REPLACEMENT_SPECIAL)
    command = f"sed -i '{line}s{d}{find}{d}{put}{d}' {shlex.quote(path)}"
    return command if applies(command, old) == new else None


def applies(command: str, line: str) -> str | None:
    """What `command` (as `sed_command` writes it) makes of `line`, replayed here; None if it is not one."""
    m = re.fullmatch(r"sed -i '\d+s([/|#])((?:\\.|[^\\])*?)\1((?:\\.|[^\\])*?)\1' \S+", command)
    if m is None:
        return None
    find = re.sub(r"\\(.)", r"\1", m.group(2))
    put = re.sub(r"\\(.)", r"\1", m.group(3))
    at = line.find(find)
    return None if at < 0 or not find else line[:at] + put + line[at + len(find):]
