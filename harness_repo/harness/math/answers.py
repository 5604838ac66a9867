"""Reading a numeric answer out of a completion."""

from __future__ import annotations

import re

ANSWER_LINE = re.compile(r"answer\s*[:=]\s*(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def answer_line(text: str) -> str | None:
    """The number on the last 'Answer: N' line, if the completion has one."""
    found = ANSWER_LINE.findall(text)
    return found[-1].replace(",", "") if found else None


def last_number(text: str) -> str | None:
    found = NUMBER.findall(text)
    return found[-1].replace(",", "") if found else None


def same_number(a: str | None, b: str) -> bool:
    if a is None:
        return False
    try:
        return abs(float(a) - float(b)) < 1e-6
    except ValueError:
        return a.strip() == b.strip()
