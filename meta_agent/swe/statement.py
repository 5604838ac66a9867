"""Problem statements written from what the failing tests report, never from the patch.

A statement names the failing tests and quotes their assertion messages (trimmed, with
memory addresses, temp paths and names, sandbox scratch dirs and the interpreter's location
removed, so the same bug gives the same text on every machine), the way a user's bug report would. It is built only from
test outcomes; then every line that quotes a line the gold patch changes is removed, so the
fix cannot be read off the text.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable

MAX_LISTED = 12
MAX_QUOTED = 3
MAX_MESSAGE_LINES = 12
MAX_MESSAGE_CHARS = 900
MIN_FORBIDDEN_CHARS = 4
"""Changed lines shorter than this (`)`, `else:`) cannot identify the fix and are not filtered."""

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_BARE_ADDRESS = re.compile(r"(?:\b0x|(?<=\.\.\.)x)[0-9a-fA-F]{10,}\b")
"""A memory address without ` at`, also as pytest's shortened repr cuts it (`<Foo...x7f3a2c1d9e50>`)."""
_TMP_PATH = re.compile(rf"(?:/tmp|/scratch|{re.escape(tempfile.gettempdir())})/[^\s'\"):,]+")
"""A path in the temp dir, or in a sandbox's scratch dir (HOME and TMPDIR; docker's is /scratch)."""
_SESSION_DIR = re.compile(r"[^\s'\"():,]*meta-agent-[a-z]+(?:-[a-z]+)*-[^\s'\"):,]*")
"""What is left of a meta-agent temp dir (a sandbox session's, a build's checkouts) once a path is cut."""
_TEMP_NAME = re.compile(r"\btmp[a-z0-9_]{8}\b")
"""A bare name from Python's tempfile (`tmp` + 8 random characters), as a test prints a file it made."""
_PYTHON_PATH = re.compile(r"(?:/[^\s'\"():,<>]+)?/lib/python3\.\d+/")
"""Where the interpreter or the test venv lives differs per machine: `<python>/operator.py`."""
_PYTEST_HINTS = ("Use -v to get more diff", "Use -vv to get more diff", "Full diff:", "Omitting ")


def changed_lines(diff: str) -> list[str]:
    """The stripped content of every added or removed line of a unified diff (headers excluded)."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")) or not line.startswith(("+", "-")):
            continue
        text = line[1:].strip()
        if len(text) >= MIN_FORBIDDEN_CHARS:
            out.append(text)
    return out


def _clean_message(message: str, forbidden: list[str]) -> str:
    message = _BARE_ADDRESS.sub("", _ADDRESS.sub("", message))
    message = _PYTHON_PATH.sub("<python>/", _TMP_PATH.sub("<tmp>", message))
    message = _TEMP_NAME.sub("<tmp>", _SESSION_DIR.sub("<tmp>", message))
    kept = [line.rstrip() for line in message.strip().splitlines()
            if line.strip() and not line.strip().startswith(_PYTEST_HINTS) and not any(f in line for f in forbidden)]
    text = "\n".join(kept[:MAX_MESSAGE_LINES])
    if len(kept) > MAX_MESSAGE_LINES:
        text += "\n..."
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS].rstrip() + " ..."
    return text


def write_problem_statement(
    project: str,
    failing: list[str],
    messages: dict[str, str],
    *,
    forbidden: Iterable[str] = (),
) -> str:
    """A bug report for `project`: which tests fail and what they say; no line in `forbidden` is quoted."""
    banned = [f for f in forbidden if len(f) >= MIN_FORBIDDEN_CHARS]
    tests = sorted(failing)
    count = "a test that should pass now fails" if len(tests) == 1 else f"{len(tests)} tests that should pass now fail"
    parts = [f"{project}: {count}", "",
             "After a recent change to the library code, running the test suite shows failures in tests that "
             "used to pass:", ""]
    parts += [f"- {t}" for t in tests[:MAX_LISTED]]
    if len(tests) > MAX_LISTED:
        parts.append(f"- ... and {len(tests) - MAX_LISTED} more")
    quoted: list[str] = []
    seen: set[str] = set()
    for test in tests:
        text = _clean_message(messages.get(test, ""), banned)
        if not text or text in seen:
            continue
        seen.add(text)
        indented = "\n".join("    " + line for line in text.splitlines())
        quoted.append(f"{test}\n{indented}")
        if len(quoted) == MAX_QUOTED:
            break
    if quoted:
        parts += ["", "What the failing tests report:", "", *"\n\n".join(quoted).splitlines()]
    parts += ["", "The tests are correct; the bug is in the library code. Fix it so these tests pass "
                  "without breaking the rest of the suite."]
    return "\n".join(parts)


def quotes_patch(statement: str, diff: str) -> bool:
    """True if the statement contains any line the diff adds or removes (then the task is not kept)."""
    return any(line in statement for line in changed_lines(diff))
