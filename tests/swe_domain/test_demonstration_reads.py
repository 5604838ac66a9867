"""A warm start's demonstration may only do what a policy on a sealed task could: every line number it writes
is one it was shown. A user complained the other way round: the warm-started policy read a function's
docstring, never its code, and then edited a line it had not seen, because its demonstrations had opened the
listing at the bug's line, a number only the gold fix knows.

Real commands in a real checkout (a git repository of one module); no model is trained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCSTRING_LINES = 12  # the def and its docstring fill the first listing


def _module(work: Path) -> tuple[str, int]:
    """A module whose buggy function hides behind a long docstring; (its path, the bug's line)."""
    doc = [f"    Line {i}: how clamping works." for i in range(DOCSTRING_LINES)]
    lines = ["import math", "", "", "def clamp(x, lower, upper):", '    """Limit x to [lower, upper].', *doc,
             '    """', "    if not x < lower:", "        return lower", "    return min(x, upper)", ""]
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "mathutils.py").write_text("\n".join(lines))
    from harness.swe.repo import track

    track(work)  # as a task's checkout is
    return "pkg/mathutils.py", lines.index("    if not x < lower:") + 1


def _demo(file: str, line: int) -> dict[str, object]:
    return {"function": "clamp", "file": file, "line": line, "find": "grep -rn --include='*.py' 'def clamp(' .",
            "edits": [f"sed -i '{line}s/not //' {file}"]}


def _numbers_written(reply: str) -> list[int]:
    """The line numbers a reply names: a listing's start (`sed -n 'N,+11p'`) or an edit's line (`sed -i 'Ns/`)."""
    return [int(n) for n in re.findall(r"sed -(?:n|i) '(\d+)", reply)]


def _numbers_shown(observation: str) -> set[int]:
    """The line numbers an observation showed: `path:N:` from a search, `N<tab>` from a listing."""
    return {int(n) for n in re.findall(r"^(?:\./)?[^\s:]+:(\d+):", observation, re.M)} | {
        int(n) for n in re.findall(r"^\s*(\d+)\t", observation, re.M)}


def test_a_demonstration_reads_on_past_a_docstring_and_writes_only_numbers_it_was_shown(
        harness_modules: Path, tmp_path: Path) -> None:
    from harness.swe.demonstrations import act_out
    from harness.swe.settings import AgentSettings

    work = tmp_path / "checkout"
    file, bug_line = _module(work)
    task = {"id": "t1", "prompt": "tests/test_mathutils.py::test_clamp fails"}
    conv = act_out(task, _demo(file, bug_line), work, AgentSettings(max_turns=6), lambda reply: True)
    assert conv is not None
    replies = [m["content"] for m in conv if m["role"] == "assistant"]
    reads = [r for r in replies if "cat -n" in r]
    assert len(reads) >= 2, "the first listing (the def and its docstring) cannot show the bug's line"
    assert "sed -n '4,+" in reads[0], "the first listing starts at the def line the search printed"
    shown: set[int] = set()
    for i, m in enumerate(conv):
        if m["role"] == "assistant":
            unseen = set(_numbers_written(m["content"])) - shown
            assert not unseen, f"turn {i} writes line(s) {unseen} it was never shown: {m['content']}"
        elif i >= 2:  # the system prompt and the statement show no line numbers
            shown |= _numbers_shown(m["content"])
    assert bug_line in shown and replies[-1] == "```bash\nsubmit\n```"
    assert "if x < lower:" in (work / file).read_text(), "the edit made the fix"


@pytest.mark.parametrize("max_turns", [3, 4])
def test_a_demonstration_with_no_turn_left_to_reach_the_bug_is_left_out(
        harness_modules: Path, tmp_path: Path, max_turns: int) -> None:
    """Rather than a shortcut to the bug's line: a policy given these turns could not have got there."""
    from harness.swe.demonstrations import act_out
    from harness.swe.settings import AgentSettings

    work = tmp_path / "checkout"
    file, bug_line = _module(work)
    task = {"id": "t1", "prompt": "tests/test_mathutils.py::test_clamp fails"}
    assert act_out(task, _demo(file, bug_line), work, AgentSettings(max_turns=max_turns), lambda r: True) is None
    assert "if not x < lower:" in (work / file).read_text(), "nothing was edited"


def test_a_demonstration_whose_search_shows_no_def_is_left_out(harness_modules: Path, tmp_path: Path) -> None:
    from harness.swe.demonstrations import act_out
    from harness.swe.settings import AgentSettings

    work = tmp_path / "checkout"
    file, bug_line = _module(work)
    demo = {**_demo(file, bug_line), "find": "grep -rn --include='*.py' 'def clamped(' ."}
    assert act_out({"id": "t1", "prompt": "p"}, demo, work, AgentSettings(max_turns=6), lambda r: True) is None


def test_a_cut_listing_shows_only_its_whole_lines(harness_modules: Path) -> None:
    from harness.swe.agent import CUT_MARK
    from harness.swe.demonstrations import shown_lines

    assert shown_lines("    40\tdef f():\n    41\t    x = 1\n") == [40, 41]
    cut = f"    40\tdef f():\n    41\t    x = 1\n    42\t    ret{CUT_MARK}20 characters cut ...]"
    assert shown_lines(cut) == [40, 41]
    assert shown_lines("exit code 1") == []
