"""Text an agent or a provider hands back is data of any shape: make it safe to keep, log and pass on.

A provider may return lone UTF-16 surrogates (valid JSON escapes, invalid Unicode): they crash every
UTF-8 writer downstream (terminal, git, journal), so they are replaced at the boundary. Sizes are
bounded where text is kept: a reply that stays in the conversation history is re-sent on every
later call, so an unbounded one costs tokens on every turn.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile(r"[\ud800-\udfff]")
CUT = "\n[... {n:,} characters cut by meta-agent{hint} ...]\n"


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD (everything else unchanged)."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def bound(text: str, limit: int, hint: str = "") -> str:
    """At most about `limit` characters: the head and the tail (errors and summaries tend to be at the end)
    around a marker saying how much was cut, and `hint` on what to do instead."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.6)
    tail = limit - head
    return text[:head] + CUT.format(n=len(text) - limit, hint=f"; {hint}" if hint else "") + text[-tail:]
