"""The scripted agent's commands, run here without a sandbox: an edit too long for one reply is sent in
parts that, run one after another, leave the file exactly as the gold patch does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from meta_agent.swe.competent import fix_commands
from meta_agent.swe.instance import SweInstance

BUGGY = "def table(rows):\n    lines = []\n    for r in rows[:-1]:\n        lines.append(r)\n    return lines\n"
FIXED = ("def table(rows):\n    lines = []\n    for r in rows[:-1]:\n        lines.append(r)\n"
         "    append_row(\n        lines,\n        rows[-1],\n        widths,\n        aligns,\n"
         "        fmt.datarow,\n        rowalign=aligns[-1],\n    )\n    return lines\n")
PATCH = """diff --git a/pkg/t.py b/pkg/t.py
--- a/pkg/t.py
+++ b/pkg/t.py
@@ -3,3 +3,11 @@ def table(rows):
     for r in rows[:-1]:
         lines.append(r)
+    append_row(
+        lines,
+        rows[-1],
+        widths,
+        aligns,
+        fmt.datarow,
+        rowalign=aligns[-1],
+    )
     return lines
"""


def _run_edits(commands: list[str], root: Path) -> None:
    for command in commands:
        if command.startswith("python3 - <<'EOF'"):
            body = re.fullmatch(r"python3 - <<'EOF'\n(.*)\nEOF", command, re.DOTALL)
            assert body is not None
            subprocess.run([sys.executable, "-"], input=body.group(1), text=True, cwd=root, check=True)


def test_a_long_edit_is_sent_in_parts_that_together_make_the_gold_fix(tmp_path: Path) -> None:
    instance = SweInstance(instance_id="p.1", repo="pypi/p", base_commit="0" * 40, patch=PATCH,
                           problem_statement="", FAIL_TO_PASS=["t::a"])
    whole = fix_commands(instance)
    limit = 150
    parts = fix_commands(instance, lambda c: len(c) <= limit)
    assert len(parts) > len(whole), "the edit no longer fits one reply, so it takes more turns"
    assert all(len(c) <= limit for c in parts if c.startswith("python3"))
    for commands in (whole, parts):
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / "t.py").write_text(BUGGY)
        _run_edits(commands, tmp_path)
        assert (tmp_path / "pkg" / "t.py").read_text() == FIXED
    assert fix_commands(instance, lambda c: True) == whole, "an edit that fits is sent whole"
