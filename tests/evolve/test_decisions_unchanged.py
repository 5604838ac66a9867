"""Refactoring the loop changes no decision: the tiny reference run makes the same candidates, stages,
verdicts and merges, with the same candidate and final trees, as the run recorded in golden/.

When a change is *meant* to alter decisions (a new gate rule, a new seed skill), re-record the file:
`python -m tests.evolve.lineage_signature RUN_DIR > tests/evolve/golden/tiny_run.json` on a fresh
reference run, and say why in the commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evolve.lineage_signature import signature

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`

GOLDEN = Path(__file__).parent / "golden" / "tiny_run.json"


def test_the_reference_run_decides_what_the_recorded_run_decided(reference_run: Path) -> None:
    expected = json.loads(GOLDEN.read_text())
    got = signature(reference_run)
    for part in ("candidates", "stages", "verdicts", "merges", "final_main_tree", "mainline"):
        assert got[part] == expected[part], f"{part} differs from the recorded run"
