"""A one-line fix as a `sed` substitution: the shortest edit a warm-started policy is shown.

A user who turns on the warm start expects every demonstrated edit to make exactly the gold fix when the
real `sed` runs it, whatever the line holds (regex characters, the delimiter, quotes, the changed token
also appearing earlier on the line), and a plain rewrite of the line where no substitution is safe.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from meta_agent.swe.competent import patch_edits
from meta_agent.swe.sed_edit import applies, sed_command, substitution
from meta_agent.swe.shipped import SHIPPED_DIR

LINES = [
    ("    if a < b and c < d:", "    if a < b and c <= d:"),  # the changed `<` is the second one
    ("    return x[i + 1]", "    return x[i]"),
    ("    y = a.b * c[0] / 2 ^ 3 $ & \\ z", "    y = a.b * c[0] // 2 ^ 3 $ & \\ z"),  # every BRE special
    ("    p = a / b | c # d", "    p = a // b | c # d"),  # `/` changes: another delimiter
    ("    return foo(a, b)", "    return foo(b, a)"),
    ("    total += n", "    total -= n"),
    ("    s = range(len(seq))", "    s = range(len(seq) + 1)"),  # an insertion inside `))`
    ("    x = [i for i in y if i]", "    x = [i for i in y if not i]"),
    ("        if not re.search(r'(?i)\\b(%s)\\Z' % w, word):", "        if re.search(r'(?i)\\b(%s)\\Z' % w, word):"),
    ("\tif n == 0:", "\tif n != 0:"),
    ("    return a&b", "    return a|b"),
]


def _real_sed(command: str, line: str, tmp: Path) -> str:
    (tmp / "f.py").write_text(f"before\n{line}\nafter\n")
    subprocess.run(command, shell=True, cwd=tmp, check=True, timeout=10)
    text = (tmp / "f.py").read_text().split("\n")
    assert text[0] == "before" and text[2] == "after"  # only the numbered line changes
    return text[1]


@pytest.mark.parametrize(("old", "new"), LINES)
def test_real_sed_makes_exactly_the_fixed_line(old: str, new: str, tmp_path: Path) -> None:
    command = sed_command("f.py", 2, old, new)
    assert command is not None and command.startswith("sed -i '2s")
    assert len(command) < len(old) + 25  # shorter than rewriting the line
    assert _real_sed(command, old, tmp_path) == new


def test_no_substitution_where_the_shell_or_sed_cannot_carry_it_safely() -> None:
    # the changed part holds a quote: the shell's single quotes cannot hold it
    assert sed_command("f.py", 1, "    return s.replace('-', '_')", "    return s.replace('_', '-')") is None
    assert sed_command("f.py", 1, "same", "same") is None
    assert sed_command("f.py", 1, "a\nb", "a\nc") is None
    assert sed_command("f.py", 1, "a /|# b", "a /|# c /|#") is None  # every delimiter is on the line's change
    assert applies("rm -rf / #", "x") is None  # only its own form is replayed


def test_the_old_part_is_whole_tokens_and_its_first_occurrence_is_the_change() -> None:
    assert substitution("    if a < b and c < d:", "    if a < b and c <= d:") == ("< d", "<= d")
    assert substitution("    total += n", "    total -= n") == ("+=", "-=")
    assert substitution("    return x[i + 1]", "    return x[i]") == (" + 1", "")
    assert substitution("    s = range(len(seq))", "    s = range(len(seq) + 1)") == ("))", ") + 1)")


def test_every_one_line_fix_of_the_default_set_is_a_substitution_or_a_rewrite(tmp_path: Path) -> None:
    fixes = []
    for split in ("train", "selection", "test"):
        with gzip.open(SHIPPED_DIR / f"{split}.jsonl.gz", "rt") as f:
            for row in f:
                edits = patch_edits(json.loads(row)["patch"])
                if len(edits) == 1 and len(edits[0].removed) == len(edits[0].added) == 1:
                    fixes.append((edits[0].removed[0], edits[0].added[0]))
    commands = [(sed_command("f.py", 2, old, new), old, new) for old, new in fixes]
    made = [(c, old, new) for c, old, new in commands if c is not None]
    assert len(made) >= 0.95 * len(fixes) > 400
    assert all(applies(c, old) == new for c, old, new in made)
    for c, old, new in made[::25]:  # a sample through the real sed
        assert _real_sed(c, old, tmp_path) == new, c
