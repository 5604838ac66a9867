"""Defaults shared by the library, the `tasks` commands and docs/swe-tasks.md (which a test checks).

Kept in a module of their own, with no imports, so the CLI can show them without loading the builder.
"""

from __future__ import annotations

DEFAULT_MAX_PER_PROJECT = 100
"""Instances kept per project unless asked otherwise; the default task set is built with it."""
