"""SWE failure-mode labels (the shared ones are in harness/diagnostics.py).

They read what the episode recorded (`extra`: commands, exit codes, end reason, diff) and
the test results the reward computed.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.rollout import Rollout
from harness.swe.repo import is_test_file, touched_files


def no_command(r: Rollout) -> bool:
    """At least one turn had no well-formed ```bash block."""
    return bool(r.extra.get("no_command_turns", 0))


def command_error(r: Rollout) -> bool:
    """A command exited non-zero."""
    return any(code != 0 for code in r.extra.get("exit_codes", []))


def turn_cap_reached(r: Rollout) -> bool:
    return r.extra.get("end_reason") == "turn_cap"


def empty_diff(r: Rollout) -> bool:
    return not r.extra.get("diff", "").strip()


def diff_does_not_apply(r: Rollout) -> bool:
    return not r.extra.get("tests", {}).get("applies", True)


def syntax_error_introduced(r: Rollout) -> bool:
    return bool(r.extra.get("tests", {}).get("syntax_error"))


def tests_edited(r: Rollout) -> bool:
    """The diff touches test files: tampering with the judge rather than fixing the code."""
    return any(is_test_file(f) for f in touched_files(r.extra.get("diff", "")))


def wrong_file_edited(r: Rollout) -> bool:
    """Localization failure: source files were edited, none of them the one the fix belongs in."""
    gold = set(r.task["metadata"].get("gold_files", []))
    edited = [f for f in touched_files(r.extra.get("diff", "")) if not is_test_file(f)]
    return bool(gold) and bool(edited) and not gold & set(edited)


def pass_to_pass_regression(r: Rollout) -> bool:
    return r.extra.get("tests", {}).get("p2p_failed", 0) > 0


DIAGNOSTICS: dict[str, Callable[[Rollout], bool]] = {
    "no_command": no_command,
    "command_error": command_error,
    "turn_cap_reached": turn_cap_reached,
    "empty_diff": empty_diff,
    "diff_does_not_apply": diff_does_not_apply,
    "syntax_error_introduced": syntax_error_introduced,
    "tests_edited": tests_edited,
    "wrong_file_edited": wrong_file_edited,
    "pass_to_pass_regression": pass_to_pass_regression,
}
